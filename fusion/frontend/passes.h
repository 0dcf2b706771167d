// Graph passes run after import: bind symbolic dims, infer shapes while folding constants
// (so torch.onnx.export's Shape->Gather->Unsqueeze->Concat->Reshape chains become static), and
// remove nodes nothing needs. Folding evaluates nodes through an injected evaluator, so the math
// stays in the op library and this layer does not depend on the executor.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/ops/registry.h"

namespace gaf {

using NodeEvaluator = std::function<std::vector<Tensor>(const Node&, const std::vector<const Tensor*>&,
                                                        const std::vector<const TensorDesc*>&)>;

struct PassStats {
  int folded_nodes = 0;
  int removed_nodes = 0;
  int canonicalized_nodes = 0;  // rewritten to one spelling (canonicalize.h)
  int merged_nodes = 0;         // duplicates of an earlier node (duplicate_nodes.h)
};

// Folds nodes whose inputs are all constants (or shape-only) and whose outputs hold at most
// `max_fold_elements` elements each.
PassStats infer_and_fold(Graph& g, const NodeEvaluator& eval, int64_t max_fold_elements = 1 << 22);
// Removes nodes whose outputs are all constants or unused by the graph outputs; drops unused
// initializers.
int remove_dead_nodes(Graph& g);

// Graph inputs that some node reads as a value input (a Reshape's shape, a Slice's starts...):
// planning needs their contents, so they must be specialised to constants first.
std::vector<std::string> value_graph_inputs(const Graph& g);
// Turns the given graph inputs into initializers holding `values` (specialisation).
void specialize_inputs(Graph& g, const std::map<std::string, Tensor>& values);

// Bind dims (every symbol of a graph input must be bound: GafError lists the unbound ones),
// then infer+fold, then dead-node removal, then canonicalize (canonicalize.h), then validate.
// `dynamic` dims stay symbolic over their ranges (Graph::dynamic, Value::sym_dims; see
// fusion/ops/symbolic_dims.h): the graph is typed at their upper bounds.
PassStats prepare_graph(Graph& g, const std::map<std::string, int64_t>& fixed_dims, const NodeEvaluator& eval,
                        const SymbolRanges& dynamic = {});

}  // namespace gaf
