#include "fusion/frontend/passes.h"

#include <algorithm>
#include <optional>
#include <set>

#include "fusion/frontend/canonicalize.h"
#include "fusion/frontend/duplicate_nodes.h"
#include "fusion/frontend/dequantized_matmul.h"
#include "fusion/ops/symbolic_dims.h"

namespace gaf {

PassStats infer_and_fold(Graph& g, const NodeEvaluator& eval, int64_t max_fold_elements) {
  PassStats stats;
  const OpRegistry& reg = OpRegistry::global();
  std::optional<SymbolicDims> sym;
  if (!g.dynamic.empty()) sym.emplace(g.dynamic, eval);
  infer_shapes(g, [&](Graph& graph, int idx, const std::vector<const TensorDesc*>& types,
                      const std::vector<const Tensor*>& ins) {
    const Node& n = graph.nodes()[idx];
    const bool symbolic = sym && SymbolicDims::reads_symbolic(graph, n);
    try {
      if (symbolic) sym->fit_outputs(graph, idx);
    } catch (const GafError& e) {
      throw GafError("node '" + n.name + "' (" + n.op_type + "): " + e.what());
    }
    const OpSchema& schema = reg.get(n);
    if (!schema.foldable) return;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (types[i] && !ins[i] && !schema.is_shape_only_input(static_cast<int>(i))) return;  // not constant
    for (const std::string& o : n.outputs)
      if (!o.empty() && (shape_numel(graph.value(o).type.shape()) > max_fold_elements ||
                         !graph.value(o).sym_dims.empty()))  // a shape that varies: computed at run time
        return;
    std::vector<Tensor> outs = eval(n, ins, types);
    if (symbolic && !sym->fold_symbolic(graph, idx, outs)) return;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) graph.value(n.outputs[k]).constant = outs[k];
    ++stats.folded_nodes;
  });
  return stats;
}

int remove_dead_nodes(Graph& g) {
  std::set<std::string> needed(g.outputs().begin(), g.outputs().end());
  std::vector<Node> kept;
  const std::vector<Node>& nodes = g.nodes();
  std::vector<int> order = g.topological_order();
  std::vector<bool> keep(nodes.size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = nodes[*it];
    bool live = false;
    for (const std::string& o : n.outputs)
      if (!o.empty() && needed.count(o) && !g.is_constant(o)) live = true;
    if (!live) continue;
    keep[*it] = true;
    for (const std::string& in : n.inputs)
      if (!in.empty()) needed.insert(in);
  }
  int removed = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (keep[i])
      kept.push_back(nodes[i]);
    else
      ++removed;
  }
  // Values no longer produced or used go too (folded constants keep living as initializers).
  std::set<std::string> produced, inputs(g.inputs().begin(), g.inputs().end());
  for (const Node& n : kept)
    for (const std::string& o : n.outputs) produced.insert(o);
  g.set_nodes(std::move(kept));
  for (auto it = g.values().begin(); it != g.values().end();) {
    const std::string& name = it->first;
    bool used = needed.count(name) || produced.count(name) || inputs.count(name);
    it = used ? std::next(it) : g.values().erase(it);
  }
  return removed;
}

std::vector<std::string> value_graph_inputs(const Graph& g) {
  std::set<std::string> inputs(g.inputs().begin(), g.inputs().end()), found;
  const OpRegistry& reg = OpRegistry::global();
  for (const Node& n : g.nodes()) {
    const OpSchema* s = reg.find(n.op_type);
    if (!s) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (s->is_value_input(static_cast<int>(i)) && inputs.count(n.inputs[i])) found.insert(n.inputs[i]);
  }
  return {found.begin(), found.end()};
}

void specialize_inputs(Graph& g, const std::map<std::string, Tensor>& values) {
  for (const auto& [name, t] : values) {
    auto it = std::find(g.inputs().begin(), g.inputs().end(), name);
    if (it == g.inputs().end()) throw GafError("cannot specialise '" + name + "': not a graph input");
    g.inputs().erase(it);
    Value& v = g.value(name);
    v.type = TensorType(t.dtype(), t.shape());
    v.constant = t;
  }
}

namespace {

// A folded value whose contents vary with the dynamic dims (Value::sym_contents) is a shape; a
// node that reads it as tensor data (a Gather of position ids arange(past, past + seq)) cannot be
// given one fixed tensor. Such values are unfolded: their producers run in kernels after all,
// back along the chain to the values they read as value inputs, which kernels get as expressions
// in the dims. Before dead-node removal, which would drop those producers. Returns how many nodes.
int unfold_symbolic_data_reads(Graph& g) {
  const OpRegistry& reg = OpRegistry::global();
  std::map<std::string, int> producer;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& o : g.nodes()[i].outputs)
      if (!o.empty()) producer[o] = static_cast<int>(i);
  std::vector<int> running;  // nodes with an output not folded: they run in kernels
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& o : g.nodes()[i].outputs)
      if (!o.empty() && !g.is_constant(o)) {
        running.push_back(static_cast<int>(i));
        break;
      }
  std::set<int> unfolded;
  while (!running.empty()) {
    const Node& n = g.nodes()[running.back()];
    running.pop_back();
    const OpSchema& schema = reg.get(n);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      Value& v = g.value(n.inputs[i]);
      if (v.sym_contents.empty() || schema.is_value_input(static_cast<int>(i)) ||
          schema.is_shape_only_input(static_cast<int>(i)))
        continue;
      auto p = producer.find(n.inputs[i]);
      if (p == producer.end() || !unfolded.insert(p->second).second)
        continue;                                                  // no producer: check_symbolic_reads names it
      for (const std::string& o : g.nodes()[p->second].outputs) {  // the node runs: all its outputs are computed
        if (o.empty()) continue;
        g.value(o).constant.reset();
        g.value(o).sym_contents.clear();
      }
      running.push_back(p->second);
    }
  }
  return static_cast<int>(unfolded.size());
}

// Symbolic contents are shapes: a node may read them where its schema reads contents at compile
// time (value inputs) or only the shape, not as tensor data a kernel loads.
void check_symbolic_reads(const Graph& g) {
  const OpRegistry& reg = OpRegistry::global();
  for (const Node& n : g.nodes()) {
    const OpSchema& schema = reg.get(n);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty() || g.value(n.inputs[i]).sym_contents.empty()) continue;
      if (schema.is_value_input(static_cast<int>(i)) || schema.is_shape_only_input(static_cast<int>(i))) continue;
      throw GafError("node '" + n.name + "' (" + n.op_type + ") reads '" + n.inputs[i] +
                     "', computed from the dynamic dims, as tensor data: dynamic dims reach kernels "
                     "only as shapes; give the dims one value with --dim NAME=VALUE");
    }
  }
}

}  // namespace

PassStats prepare_graph(Graph& g, const std::map<std::string, int64_t>& fixed_dims, const NodeEvaluator& eval,
                        const SymbolRanges& dynamic) {
  std::map<std::string, int64_t> dims = fixed_dims;
  g.dynamic.clear();
  for (const auto& [name, r] : dynamic) {
    dims[name] = r.hi;  // the representative point
    if (r.lo < r.hi) g.dynamic[name] = r;
  }
  g.bind_dims(dims);
  for (const std::string& in : g.inputs()) {
    Value& v = g.value(in);
    SymShape s;
    bool symbolic = false;
    for (const Dim& d : v.type.dims) {
      symbolic = symbolic || g.dynamic.count(d.symbol);
      s.push_back(g.dynamic.count(d.symbol) ? SymExpr::symbol(d.symbol) : SymExpr::constant(d.value));
    }
    v.sym_dims = symbolic ? s : SymShape{};
  }
  std::vector<std::string> unbound = g.unbound_symbols();
  if (!unbound.empty()) {
    std::string list;
    for (const std::string& s : unbound) list += (list.empty() ? "" : ", ") + s;
    throw GafError("unbound symbolic dim(s): " + list + " (bind with --dim NAME=VALUE)");
  }
  for (const std::string& in : g.inputs()) {
    const TensorType& t = g.value(in).type;
    if (!t.is_static())
      throw GafError("input '" + in + "' has unknown shape " + t.str() + " (the model does not declare it)");
    try {
      byte_size(t.dtype, t.shape());
    } catch (const GafError& e) {
      throw GafError("input '" + in + "': " + e.what());
    }
  }
  PassStats s = infer_and_fold(g, eval);
  s.folded_nodes -= unfold_symbolic_data_reads(g);
  s.removed_nodes = remove_dead_nodes(g);
  s.canonicalized_nodes = canonicalize(g);
  s.merged_nodes = merge_duplicate_nodes(g);
  s.removed_nodes += remove_dead_nodes(g);             // the Casts canonicalize bypassed, the duplicates merged
  if (const int q = rewrite_dequantized_matmuls(g)) {  // their quantize/integer nodes go unused
    s.canonicalized_nodes += q;
    s.removed_nodes += remove_dead_nodes(g);
  }
  g.validate();
  check_symbolic_reads(g);
  return s;
}

}  // namespace gaf
