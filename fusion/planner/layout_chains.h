// Layout ops (Slice, Split, one-entry Gather, Reshape, Transpose) next to a MatMul inside one group, as
// index arithmetic instead of copies:
// - a layout prologue: the MatMul reads its operand straight from the producer's input (BERT's
//   Q, K^T and V: slices of the wide QKV output, reshaped into heads and transposed);
// - a layout epilogue: the MatMul's register tiles are stored straight into the group output in
//   its layout (attention's probs x V, transposed and reshaped back into [S, hidden]).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fusion/planner/pattern.h"

namespace gaf {

// Empty when the nodes `chain` (all producers inside one group, ending in the value the MatMul
// `matmul` reads) may be inlined into that read; otherwise why not, naming the node. Allowed:
// Slice with unit steps, Split (unit-step slices), Gather of one constant index off the innermost axis, reshape-like ops
// whose output rows are runs of their input rows, and Transposes that keep the innermost axis —
// the operand's rows stay runs of memory, so the MatMul's loads stay dense and the index
// arithmetic is hoisted out of its k loop. A Transpose
// that moves the innermost axis is allowed only into B (the host schedule stages B per block,
// MemberFuncs::stage_b); into A every k step would gather.
std::string layout_prologue_refusal(const GraphView& v, const std::set<int>& chain, int matmul);

// The MatMul `nodes[pos]` (of a group whose nodes, in topological order, are `nodes`) reaches
// the group output `output` through the layout ops after it, each reading the one before
// (Transposes that keep the innermost axis, reshape-like ops): returns the run length L such
// that every L-aligned run of L output columns is one row segment of the MatMul and the output's
// rows are the MatMul's rows — so the MatMul's tiles, L wide, can be carried by the output. 0
// when there is no such chain.
int64_t layout_epilogue_run(const Graph& g, const std::vector<int>& nodes, size_t pos, const std::string& output);

// Transpose `n`'s output dim (Halide's order, 0 = innermost) that walks its input's innermost
// (stride-1) axis; 0 when the innermost axis stays innermost.
int transpose_innermost_dim(const Graph& g, const Node& n);

}  // namespace gaf
