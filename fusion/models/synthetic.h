// Synthetic graphs for the planner's scaling checks (bench/planner_bench, the planner tests):
// shapes that stress the planner's bookkeeping rather than the kernels.
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// One elementwise chain of `n` nodes on x float32 [64, 256]: Relu, Add of a constant, alternating.
Graph elementwise_chain_graph(int n);
// x float32 [64, 256] read by n/2 branches (Relu, then Add of a constant each), summed pairwise
// back to one output: a wide fan-out and a reduction tree, about n + n/2 nodes.
Graph fanout_graph(int n);

}  // namespace gaf
