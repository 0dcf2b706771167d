#include "fusion/report/graphviz.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/tensor.h"

extern char** environ;

namespace gaf {

namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A private temporary folder, removed when this goes out of scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gaf-dot-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw GafError("cannot create a temporary folder for graphviz");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string render_svg(const std::string& dot_text) {
  TempDir tmp;
  std::filesystem::path in = tmp.path / "graph.dot", out = tmp.path / "graph.svg", err = tmp.path / "err.txt";
  std::ofstream(in, std::ios::binary) << dot_text;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::string a0 = "dot", a1 = "-Tsvg", a2 = in.string(), a3 = "-o", a4 = out.string();
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
  pid_t pid;
  int rc = posix_spawnp(&pid, "dot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw GafError("cannot run graphviz 'dot' (not on PATH? install Debian's graphviz package)");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string msg = read_all(err);
    msg = msg.substr(0, msg.find('\n'));
    throw GafError("graphviz 'dot -Tsvg' failed" + (msg.empty() ? std::string() : ": " + msg));
  }
  return read_all(out);
}

}  // namespace gaf
