#include "bench/memory_probe.h"

#include <cstdio>
#include <stdexcept>

#include "bench/coprocess.h"

namespace gaf::bench {

std::optional<RunMemory> run_memory(const std::vector<std::string>& argv, std::string& why) {
  RunMemory m;
  bool have_arena = false, have_rss = false;
  try {
    Coprocess child(argv);
    // gaf run: "forward (fused): median ... ms over 1 run(s), peak intermediate memory 2.4 MB"
    // bert_infer: "plan: ...: 61 groups, arena 2.36 MB (lower bound 2.36 MB), ..."
    // both: "peak RSS 447.6 MB (weights 340.2 MB)"
    while (!have_rss) {
      const std::string line = child.read_line();
      size_t at = line.find("peak intermediate memory ");
      if (at != std::string::npos)
        have_arena = std::sscanf(line.c_str() + at, "peak intermediate memory %lf MB", &m.arena_mb) == 1;
      at = line.find(", arena ");
      if (line.rfind("plan: ", 0) == 0 && at != std::string::npos)
        have_arena = std::sscanf(line.c_str() + at, ", arena %lf MB", &m.arena_mb) == 1;
      if (line.rfind("peak RSS ", 0) == 0)
        have_rss = std::sscanf(line.c_str(), "peak RSS %lf MB (weights %lf MB)", &m.peak_rss_mb, &m.weights_mb) == 2;
    }
  } catch (const std::runtime_error& e) {
    why = argv[0] + ": " + e.what();
    return std::nullopt;
  }
  if (!have_arena) {
    why = argv[0] + " printed no activation arena";
    return std::nullopt;
  }
  return m;
}

}  // namespace gaf::bench
