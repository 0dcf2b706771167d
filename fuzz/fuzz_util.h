// What the loader harnesses share: a private scratch folder per process, the fuzzed bytes
// written to a file in it (the loaders read paths), and a memory budget low enough that a
// declared size the loaders fail to check shows up as an allocation error, not an OOM kill.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/memory_budget.h"

namespace gaf::fuzz {

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / ("gaf_fuzz_" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(d);
    set_memory_budget(int64_t{1} << 30);
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace gaf::fuzz
