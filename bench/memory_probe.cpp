#include "bench/memory_probe.h"

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "bench/coprocess.h"

namespace gaf::bench {

std::optional<GafRunMemory> gaf_run_memory(const std::string& gaf_path, long seq, int layers, std::string& why) {
  GafRunMemory m;
  bool have_arena = false, have_rss = false;
  try {
    Coprocess gaf({gaf_path, "run", "builtin:bert-base", "--seq", std::to_string(seq), "--layers",
                   std::to_string(layers), "-q"});
    // "forward (fused): median ... ms over 1 run(s), peak intermediate memory 2.4 MB"
    // "peak RSS 429.2 MB (weights 340.2 MB)"
    while (!have_rss) {
      const std::string line = gaf.read_line();
      const size_t at = line.find("peak intermediate memory ");
      if (at != std::string::npos)
        have_arena = std::sscanf(line.c_str() + at, "peak intermediate memory %lf MB", &m.arena_mb) == 1;
      if (line.rfind("peak RSS ", 0) == 0)
        have_rss = std::sscanf(line.c_str(), "peak RSS %lf MB (weights %lf MB)", &m.peak_rss_mb, &m.weights_mb) == 2;
    }
  } catch (const std::runtime_error& e) {
    why = gaf_path + " run: " + e.what();
    return std::nullopt;
  }
  if (!have_arena) {
    why = gaf_path + " run printed no peak intermediate memory";
    return std::nullopt;
  }
  return m;
}

}  // namespace gaf::bench
