// The schedule of a fused group, applying the planner's per-Func decisions: members marked
// inline are left to Halide's inlining, compute_at members (row statistics, MatMul accumulators)
// are computed inside the row loop of the group's output, group outputs are computed at root,
// vectorised along their innermost axis and parallel over their outer axes.
#pragma once

#include <vector>

#include "fusion/ops/op_builder.h"
#include "fusion/planner/plan.h"

namespace gaf {

// One member's part of the group pipeline.
struct MemberFuncs {
  std::vector<TensorFunc> outputs;         // the member's outputs (undefined where unused)
  std::vector<FuncDecision> decisions;     // one per output, from the plan
  std::vector<Stage> stages;               // intermediate stages of the member's algorithm
};

// `group_outputs[k]` realises plan output k; `anchor` is the output compute_at decisions refer to
// (null if none).
void apply_fused_schedule(const std::vector<TensorFunc>& group_outputs, const TensorFunc* anchor,
                          const std::vector<MemberFuncs>& members);

}  // namespace gaf
