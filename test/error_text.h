// The message of the GafError `f` throws, or "" when it throws none (tests compare messages).
#pragma once

#include <functional>
#include <string>

#include "runtime/tensor.h"

namespace gaf::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const GafError& e) {
    return e.what();
  }
  return "";
}

}  // namespace gaf::testing
