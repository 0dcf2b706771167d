// Nodes that compute the same thing merged into one: the same op and attributes reading the same
// values (or constants of equal contents). Exporters repeat layer-invariant work in every layer —
// nn.MultiheadAttention rebuilds the padding mask from src_key_padding_mask in each one — and
// each copy would be a kernel of its own, run per layer.
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// Readers of a duplicate's outputs read the first node's instead (the duplicate is then dead, for
// remove_dead_nodes). Not merged: ops that are not foldable (random), collectives, nodes with a
// graph output or a KV-cache window among their outputs. Returns how many nodes were merged.
int merge_duplicate_nodes(Graph& g);

}  // namespace gaf
