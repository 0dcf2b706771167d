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

// One member's part of the group pipeline.
struct MemberFuncs {
  std::vector<TensorFunc> outputs;         // the member's outputs (undefined where unused)
  std::vector<FuncDecision> decisions;     // one per output, from the plan
  std::vector<Stage> stages;               // intermediate stages of the member's algorithm
  // A MatMul/Gemm whose output is [..., M, N] over an accumulator (n, row): the tile schedule
  // applies. (1-D operands of MatMul squeeze an axis away and do not qualify.)
  bool tiled_matmul = false;
  // A Conv over an accumulator (x, spatial..., o, n): the direct-conv tile schedule applies
  // (conv_schedule.h).
  bool tiled_conv = false;
  // A layout or indexing op (OpClass Injective/Opaque): the NPU schedule does not carry a shared
  // MatMul's materialised epilogue through it.
  bool layout = false;
  int b_panel = 0;  // its B is packed in panels of this many columns (MatMul's `_b_panel`)
  bool b_constant = false;  // its B is a weight (megabytes; streamed, not re-read per row block)
  // A Transpose that moves the input's innermost axis: the Halide dim (0 = innermost) of its
  // output that walks the input's stride-1 axis; 0 when there is none (innermost stays).
  int transpose_dim = 0;
  // A tiled MatMul whose operands are computed in the group (a layout prologue,
  // fusion/planner/layout_chains.h): A is staged densely per row block, and B when a Transpose
  // in its prologue moves the innermost axis (matmul_schedule.h's StagedOperands).
  bool stage_a = false, stage_b = false;
  // A tiled MatMul whose output reaches the group's output only through layout ops that keep
  // its rows (fusion/planner/layout_chains.h): the output carries tiles this many columns wide.
  int layout_run = 0;
  int a_member = -1;  // a MatMul: the index of the member whose output is its A (-1: a group input)
  std::optional<MemberRole> role;  // what the group's rule matched this member as (FusionGroup::roles)
};

// `group_outputs[k]` realises plan output k; `anchor` is the output compute_at decisions refer to
// (null if none).
void apply_fused_schedule(const std::vector<TensorFunc>& group_outputs, const TensorFunc* anchor,
                          const std::vector<MemberFuncs>& members, const HostScheduleParams& params);

}  // namespace gaf
