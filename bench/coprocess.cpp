#include "bench/coprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace gaf::bench {

Coprocess::Coprocess(const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (argv.empty() || pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("coprocess: cannot create pipes");
  signal(SIGPIPE, SIG_IGN);  // a dead child must give an error, not kill the bench
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("coprocess: fork failed");
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "coprocess: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = fdopen(out[0], "r");
}

Coprocess::~Coprocess() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_) std::fclose(static_cast<FILE*>(from_child_));
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

std::string Coprocess::read_line() {
  std::string line;
  int c;
  while ((c = std::fgetc(static_cast<FILE*>(from_child_))) != EOF && c != '\n') line += static_cast<char>(c);
  if (c == EOF && line.empty()) throw std::runtime_error("coprocess: the child exited");
  return line;
}

void Coprocess::send(const std::string& line) {
  std::string msg = line + "\n";
  if (write(to_child_, msg.data(), msg.size()) != static_cast<ssize_t>(msg.size()))
    throw std::runtime_error("coprocess: cannot write to the child");
}

}  // namespace gaf::bench
