// JSON text from a file a user names, parsed with every nlohmann exception turned into one
// GafError naming `origin`: a syntax error (parse_error) and a number too large for a double
// (out_of_range 406) alike. Header only: the libraries that read JSON link nlohmann privately.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/tensor.h"

namespace gaf {

inline nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw GafError(origin + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  } catch (const nlohmann::json::exception& e) {
    throw GafError(origin + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace gaf
