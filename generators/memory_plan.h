// The arena memory plan of a compiled FusionPlan: every value a group computes gets an offset in
// one arena, from its liveness under the fused executor's rule (generators/value_store.h): live
// from the step that computes it through the last step that reads it (graph outputs to the end;
// a value nobody reads only during its own step). Values whose lifetimes do not overlap share
// bytes. Graph inputs and weights are not in the arena. No Halide here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf {

struct ArenaSlot {
  std::string value;
  int64_t bytes = 0;
  int first = 0, last = 0;  // steps (plan group indices) it is live in, inclusive
  int64_t offset = 0;       // into the arena, a multiple of kArenaAlignment
};

struct MemoryPlan {
  static constexpr int64_t kArenaAlignment = 64;
  std::vector<ArenaSlot> slots;  // in the order the values are computed
  int64_t arena_bytes = 0;       // the plan's peak: max over slots of offset + bytes
  // max over steps of the bytes live during the step (each value rounded up to the alignment):
  // no placement can use less.
  int64_t lower_bound = 0;
};

// Offsets by first fit over the values ordered by size (largest first), each placed at the
// lowest aligned offset that overlaps no placed value with an overlapping lifetime.
MemoryPlan plan_memory(const Graph& g, const FusionPlan& plan);

}  // namespace gaf
