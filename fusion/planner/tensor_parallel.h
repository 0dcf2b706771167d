// Megatron-style tensor parallelism as a graph rewrite (`--tp P`, run on every rank at load).
//
// Found by the math, not by names: MatMuls with constant [K, N] weights that read the same
// activation (Q/K/V; FFN up, or gate and up) are tried as one column-parallel set. Their outputs
// are split along the last axis and the split is followed forward through the graph — into heads
// by Reshape/Transpose, through attention's MatMuls batched over heads, Softmax, masks, rotary
// Slice/Concat, GQA's Expand, activations — until every split value reaches a MatMul that
// contracts over the split axis with a constant weight: the row-parallel MatMul (attention
// output, FFN down), whose result is a partial sum, so an AllReduce is inserted after it. Each
// rank keeps only its slice of every weight the region reads (columns of the column-parallel
// weights and biases, rows of the row-parallel ones) and the region's shape constants are
// rewritten for its local heads.
//
// A set whose split reaches something that cannot run split (a norm over the split axis, a
// graph output, an operand that varies along the split axis but is not split, a head count not
// divisible by P, ...) stays replicated: every rank computes it whole, which is correct, and the
// result says why.
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf {

struct TensorParallel {
  int size = 1;  // ranks (P)
  int rank = 0;  // this process's rank, 0..size-1
};

struct ShardResult {
  std::vector<std::string> applied;  // one sentence per sharded region ("Sharded ... ")
  // Per set left replicated (GAF-NF040, its MatMuls as nodes), or the whole graph (GAF-NF041);
  // rule "tensor_parallel". The Engine adds them to the plan's refusals.
  std::vector<RefusedMerge> refused;
  int all_reduces = 0;  // AllReduce nodes inserted
};

// Rewrites the typed, static graph `g` for rank `tp.rank` of `tp.size` (nothing when size 1).
// GafError when the graph has dynamic dims or the options are out of range.
ShardResult shard_tensor_parallel(Graph& g, const TensorParallel& tp);

}  // namespace gaf
