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

// examples/aot_onnx (an out-of-tree app: find_package(gaf) on this build, `model` compiled by gaf
// compile at build time with `compile_args`, a CMake list) configured and built in `dir`; the
// app's path, or "" after a failed step (recorded as a test failure with the step's output).
inline std::string built_aot_onnx_app(const std::string& dir, const std::string& model,
                                      const std::string& compile_args = "") {
  for (const std::string& cmd :
       {"cmake -S " + source_dir() + "/examples/aot_onnx -B " + dir + "/build -DCMAKE_BUILD_TYPE=Release" +
            " -DCMAKE_CXX_COMPILER=" + CXX_COMPILER + " -Dgaf_DIR=" + GAF_BUILD_DIR + " -DMODEL=" + model +
            " '-DGAF_COMPILE_ARGS=" + compile_args + "'",
        "cmake --build " + dir + "/build"}) {
    CommandResult r = run_command(cmd, dir + "/log");
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out << r.err;
    if (r.exit_code) return "";
  }
  return dir + "/build/aot_onnx";
}

}  // namespace gaf::testing
