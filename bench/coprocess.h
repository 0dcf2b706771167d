// A child process spoken to by lines: we write a command line to its stdin and read its answer
// line from its stdout (POSIX pipes + fork/exec). Used to time the PyTorch peer interleaved with
// the in-process variants.
#pragma once

#include <string>
#include <vector>

namespace gaf::bench {

class Coprocess {
 public:
  // Starts argv[0] with the arguments argv[1..]; its stderr is inherited.
  explicit Coprocess(const std::vector<std::string>& argv);
  ~Coprocess();  // closes its stdin and waits for it
  Coprocess(const Coprocess&) = delete;
  Coprocess& operator=(const Coprocess&) = delete;

  // Next line of its stdout without the newline; throws std::runtime_error if it exited.
  std::string read_line();
  // Writes `line` + newline to its stdin.
  void send(const std::string& line);

 private:
  int pid_ = -1, to_child_ = -1;
  void* from_child_ = nullptr;  // FILE*
};

}  // namespace gaf::bench
