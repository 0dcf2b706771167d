// The host schedule of a fused group, applying the planner's per-Func decisions: members marked
// inline are left to Halide's inlining; a MatMul whose epilogue ends at the group's output has
// its accumulator computed per register tile of that output (matmul_schedule.h); row statistics
// are computed inside the output's row loop (row_schedule.h); group outputs and root members are
// computed at root, vectorised and parallel.
#pragma once

#include <optional>
#include <vector>

#include "fusion/ops/op_builder.h"
#include "fusion/planner/plan.h"
#include "schedules/host_params.h"

namespace gaf {

// One member's part of the group pipeline: its Funcs, and what the planner's kernel spec says it
// is (fusion/planner/kernel_spec.h).
struct MemberFuncs : MemberSpec {
  std::vector<TensorFunc> outputs;      // the member's outputs (undefined where unused)
  std::vector<FuncDecision> decisions;  // one per output, from the plan
  std::vector<Stage> stages;            // intermediate stages of the member's algorithm
  // A tiled MatMul whose B the weight packing laid out in panels of this many columns
  // (generators/weight_packing.h): its tiles are then exactly one panel wide.
  int b_panel = 0;
};

// `group_outputs[k]` realises plan output k; `anchor` is the output compute_at decisions refer to
// (null if none).
void apply_fused_schedule(const std::vector<TensorFunc>& group_outputs, const TensorFunc* anchor,
                          const std::vector<MemberFuncs>& members, const HostScheduleParams& params);

}  // namespace gaf
