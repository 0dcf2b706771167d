// Running the gaf binary (and Debian's python3 for model generation) from tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gaf::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  std::string out, err;
  int err_lines() const {
    int n = 0;
    for (char c : err) n += c == '\n';
    return n;
  }
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs a shell command line, capturing stdout and stderr into files under `scratch`.
inline CommandResult run_command(const std::string& cmd, const std::string& scratch) {
  std::filesystem::create_directories(scratch);
  std::string out = scratch + "/stdout.txt", err = scratch + "/stderr.txt";
  int status = std::system((cmd + " > " + out + " 2> " + err + " < /dev/null").c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline std::string gaf_binary() { return GAF_BINARY; }
inline std::string source_dir() { return GAF_SOURCE_DIR; }
inline std::string scratch_dir(const std::string& name) { return std::string(GAF_TEST_SCRATCH) + "/" + name; }
inline const char* python() { return "/usr/bin/python3"; }

}  // namespace gaf::testing
