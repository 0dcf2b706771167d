// Peak resident memory of ours fused on builtin:bert-base, measured in a `gaf run` process of its
// own (the bench process also holds the peers' weights, so its own peak says nothing about ours).
#pragma once

#include <optional>
#include <string>

namespace gaf::bench {

struct GafRunMemory {
  double peak_rss_mb = 0;  // getrusage's ru_maxrss of the whole run: load, plan, JIT, forward
  double weights_mb = 0;   // the model's weights as loaded
  double arena_mb = 0;     // the executor's peak intermediate memory (activations)
};

// Runs `gaf_path run builtin:bert-base --seq S --layers L -q` and reads its summary lines; nullopt
// (with `why` set) when the program cannot be run or prints no summary.
std::optional<GafRunMemory> gaf_run_memory(const std::string& gaf_path, long seq, int layers, std::string& why);

}  // namespace gaf::bench
