#include "fusion/planner/graph_rewrite.h"

#include "fusion/ops/registry.h"
#include "fusion/ops/symbolic_dims.h"

namespace gaf {

void replace_nodes(Graph& g, const std::set<int>& removed, std::vector<Node> added) {
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (!removed.count(static_cast<int>(i))) nodes.push_back(g.nodes()[i]);
  for (Node& n : added) nodes.push_back(std::move(n));
  g.set_nodes(std::move(nodes));
  std::set<std::string> used(g.outputs().begin(), g.outputs().end());
  for (const std::string& in : g.inputs()) used.insert(in);
  for (const Node& n : g.nodes()) {
    used.insert(n.inputs.begin(), n.inputs.end());
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  for (auto it = g.values().begin(); it != g.values().end();)
    it = used.count(it->first) ? std::next(it) : g.values().erase(it);
  infer_shapes(g);
  propagate_symbolic_dims(g);
  g.validate();
}

void add_untyped_value(Graph& g, const std::string& name) {
  TensorType unknown;
  unknown.rank_known = false;
  g.add_value(name, unknown);
}

}  // namespace gaf
