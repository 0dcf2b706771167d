// Peak memory of a grouping, predicted from what the plan knows, for the GAF-NF003 legality check
// ("a merge must not raise peak memory").
//
// The model is the fused executor's own schedule (generators/value_store.h):
//   - groups run in one topological order of the contracted graph, ties broken by the group's
//     earliest node (execution_order; FusionPlan::groups uses the same order);
//   - when a group runs, the values it hands to other groups (or the graph's outputs) are stored,
//     and each stored value is freed after the last group that reads it; graph inputs and weights
//     are not counted (they live for the whole run either way), graph outputs are never freed;
//   - while a group runs, the buffers it computes at root without handing them out are live too
//     (Halide allocates them inside the pipeline: internal_root_bytes in group_info.h).
// Peak = max over groups of (stored values live at that group + its internal root buffers).
// Not counted: inlined values (no storage), compute_at buffers (one output row) and the stages of a
// member (MatMul accumulators, row statistics), which the fused schedule keeps per row.
// With every node its own group this is the unfused schedule's peak, and ValueStore's measured
// "peak intermediate memory" is this figure without the internal buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fusion/planner/pattern.h"

namespace gaf {

// A node output as the model sees it: who makes it, who reads it, how large it is.
struct ValueUse {
  std::string name;
  int producer;
  int64_t bytes;
  bool graph_output;
  std::vector<int> consumers;
};

class PeakMemoryModel {
 public:
  explicit PeakMemoryModel(const GraphView& v);

  // `group_of[n]` = group id (any non-negative int) of node n. Group ids in execution order.
  std::vector<int> execution_order(const std::vector<int>& group_of) const;

  struct Peak {
    int64_t bytes = 0;
    int group = -1;                                     // the group running at the peak
    std::vector<std::pair<std::string, int64_t>> live;  // stored values live then, largest first
    int64_t internal = 0;                               // the group's internal root buffers
  };
  // `internal_bytes(id)` = bytes of group id's internal root buffers. `with_live` fills Peak::live.
  Peak peak(const std::vector<int>& group_of, const std::function<int64_t(int)>& internal_bytes,
            bool with_live = false) const;
  // Every node output, by node, then output order.
  const std::vector<ValueUse>& values() const { return vals_; }

 private:
  const GraphView& v_;
  std::vector<ValueUse> vals_;
  std::vector<std::pair<int, int>> edges_;  // producer node -> consumer node, each pair once
};

}  // namespace gaf
