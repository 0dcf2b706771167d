// Einsum as the MatMul it is: a two-operand Einsum whose labels are each batch (both operands and
// the output), contracted (both operands only) or free (one operand and the output) becomes
//   Transpose(A) to (batch, free A, contracted) -> MatMul <- Transpose(B) to (batch, contracted, free B)
// with Reshapes where several labels form one MatMul axis, and a Transpose to the output's order.
// Attention written with torch.einsum ("bqhd,bkhd->bhqk", "bhqk,bkhd->bqhd") then reads as the
// MatMul + layout spelling the planner's patterns and the tile schedules know. Static shapes only;
// diagonals, single-operand sums and broadcast ellipsis axes stay Einsum (fusion/ops/einsum.cpp).
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// Rewrites every such Einsum in place (the MatMul keeps the Einsum's name); returns how many.
int einsum_as_matmul(Graph& g);

}  // namespace gaf
