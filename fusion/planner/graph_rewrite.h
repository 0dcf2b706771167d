// Shared by the planner's graph rewrites (horizontal MatMul, BatchNormalization folding): swap
// some nodes for new ones and leave the graph typed and valid.
#pragma once

#include <set>
#include <vector>

#include "fusion/ir/graph.h"

namespace gaf {

// Removes the nodes `removed` (indices into g.nodes()), appends `added`, drops values no node
// or graph input/output references any more (the replaced weights, the removed intermediates),
// then infers shapes (new values may be added untyped) and validates.
void replace_nodes(Graph& g, const std::set<int>& removed, std::vector<Node> added);

// An untyped value for a rewrite to produce; replace_nodes types it.
void add_untyped_value(Graph& g, const std::string& name);

}  // namespace gaf
