// KernelSpec: what a fused group's kernel is, computed once when the group is described
// (describe_group) and read by everything downstream instead of re-deriving it: the host and NPU
// schedules read each member's structural facts (generators/group_pipeline.cpp copies them into
// MemberFuncs), the reports read the label. A new pattern adds its facts here and in its rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gaf {

// What a member node is in the pattern its group's rule matched, so that schedules read the
// structure the rule found instead of re-deriving it (attention: scores, probabilities, context;
// a gated MLP: the gate and up projections).
// Residual: the residual Add of a projection + norm group (rule matmul_layernorm). Where the
// block also reads its sum after the group (a pre-norm block's residual stream), that sum is the
// group's second output and the MatMul's tiles store it.
enum class MemberRole { Scores, Probabilities, Context, Gate, Up, Residual };
const char* member_role_name(MemberRole r);  // "scores", "probabilities", "context", "gate", "up", "residual"

// One member of the group (FusionGroup::nodes, same order), as the schedules need it.
struct MemberSpec {
  // What the group's rule matched this member as (FusionGroup::roles), if anything.
  std::optional<MemberRole> role;
  // A MatMul/Gemm whose output is [..., M, N] over an accumulator (n, row): the tile schedule
  // applies. (1-D operands of MatMul squeeze an axis away and do not qualify.)
  bool tiled_matmul = false;
  // A Conv over an accumulator (x, spatial..., o, n): the direct-conv tile schedule applies.
  bool tiled_conv = false;
  // A layout or indexing op (OpClass Injective/Opaque): the NPU schedule does not carry a shared
  // MatMul's materialised epilogue through it.
  bool layout = false;
  // A Transpose that moves the input's innermost axis: the Halide dim (0 = innermost) of its
  // output that walks the input's stride-1 axis; 0 when there is none (innermost stays).
  int transpose_dim = 0;
  // A tiled MatMul whose operands are computed in the group (a layout prologue,
  // fusion/planner/layout_chains.h): A is staged densely per row block, and B when a Transpose
  // in its prologue moves the innermost axis (schedules/matmul_schedule.h's StagedOperands).
  bool stage_a = false, stage_b = false;
  // A tiled MatMul whose output reaches the group's single output only through layout ops that
  // keep its rows (layout_chains.h): the output carries tiles this many columns wide.
  int layout_run = 0;
  int a_member = -1;        // a MatMul: the member whose output is its A (-1: a group input)
  bool b_constant = false;  // a MatMul: its B is a weight (streamed, not re-read per row block)
};

struct KernelSpec {
  // What reports call the kernel: the rule's kernel label ("Attention", "LayerNorm"), else one
  // made from the hero op and its epilogue ("MatMul+GELU", "Conv+Add+Relu", "elementwise").
  std::string label;
  std::vector<MemberSpec> members;  // one per FusionGroup::nodes
};

}  // namespace gaf
