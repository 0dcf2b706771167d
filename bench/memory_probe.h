// Peak resident memory of ours on builtin:bert-base, each measured in a process of its own (the
// bench process also holds the peers' weights, so its own peak says nothing about ours): the JIT
// (`gaf run`) and the AOT app (`bert_infer`: kernels compiled at build time, no compiler linked).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gaf::bench {

struct RunMemory {
  double peak_rss_mb = 0;  // the program's own peak RSS (VmHWM): load, plan, JIT, forward
  double weights_mb = 0;   // the model's weights as loaded
  double arena_mb = 0;     // the executor's activation arena
};

// Runs `argv` and reads its stdout up to the "peak RSS X MB (weights Y MB)" line; the arena from
// "peak intermediate memory X MB" (gaf run) or the plan line's "arena X MB" (AOT apps). nullopt,
// with `why` set, when the program cannot be run or prints no such lines.
std::optional<RunMemory> run_memory(const std::vector<std::string>& argv, std::string& why);

}  // namespace gaf::bench
