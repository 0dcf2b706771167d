#include "generators/reference_executor.h"

#include "generators/comm_kernel.h"

#include "fusion/ops/symbolic_dims.h"

#include "generators/value_store.h"

#include <chrono>
#include <cmath>
#include <set>

namespace gaf {

double max_rel_diff(const TensorMap& a, const TensorMap& b) {
  double worst = 0;
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double x = t.as_double(i), y = u.as_double(i);
      worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
    }
  }
  return worst;
}

std::map<std::string, int64_t> check_graph_inputs(const Graph& g, const TensorMap& inputs) {
  std::map<std::string, int64_t> bound;
  std::set<std::string> declared(g.inputs().begin(), g.inputs().end());
  for (const auto& [name, _] : inputs)
    if (!declared.count(name)) {
      std::string list;
      for (const std::string& d : g.inputs()) list += (list.empty() ? "" : ", ") + d;
      throw GafError("input '" + name + "' is not an input of the model (inputs: " + list + ")");
    }
  for (const std::string& name : g.inputs()) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw GafError("input '" + name + "' is missing");
    const Tensor& t = it->second;
    const TensorType& ty = g.value(name).type;
    if (t.dtype() != ty.dtype)
      throw GafError("input '" + name + "' has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(ty.dtype));
    if (!ty.rank_known) continue;
    if (t.rank() != static_cast<int>(ty.dims.size()))
      throw GafError("input '" + name + "' has shape " + shape_str(t.shape()) + ", expected " + ty.str());
    for (int d = 0; d < t.rank(); ++d) {
      const Dim& dim = ty.dims[d];
      int64_t got = t.shape()[d];
      if (!dim.symbol.empty()) {
        auto [b, fresh] = bound.emplace(dim.symbol, got);
        if (!fresh && b->second != got)
          throw GafError("input '" + name + "' dim " + std::to_string(d) + " ('" + dim.symbol + "') is " +
                         std::to_string(got) + " but '" + dim.symbol + "' is already " + std::to_string(b->second));
      }
      if (dim.known() && dim.value != got && dim.symbol.empty())
        throw GafError("input '" + name + "' has shape " + shape_str(t.shape()) + ", expected " + ty.str());
      auto range = g.dynamic.find(dim.symbol);
      if (range != g.dynamic.end()) {
        if (!range->second.contains(got))
          throw GafError("input '" + name + "' dim " + std::to_string(d) + " ('" + dim.symbol + "') is " +
                         std::to_string(got) + ", outside the range " + range->second.str() +
                         " the model was prepared for");
        continue;
      }
      if (dim.known() && !dim.symbol.empty() && dim.value != got)
        throw GafError("input '" + name + "' dim " + std::to_string(d) + " ('" + dim.symbol + "') is " +
                       std::to_string(got) + " but was bound to " + std::to_string(dim.value));
    }
  }
  return bound;
}

NodeKernel& ReferenceExecutor::kernel_for(const OpSchema& schema, const Node& node,
                                          const std::vector<const TensorDesc*>& types,
                                          const std::vector<const Tensor*>& values) {
  std::string key = node_kernel_key(schema, node, types, values);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    ++stats_.kernel_cache_hits;
    return *it->second;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto k = compile_node_kernel(schema, node, types, values);
  stats_.compile_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.kernels_compiled;
  return *cache_.emplace(key, std::move(k)).first->second;
}

std::vector<Tensor> ReferenceExecutor::run_node(const Node& node, const std::vector<const Tensor*>& inputs,
                                                const std::vector<const TensorDesc*>& types) {
  const OpSchema& schema = OpRegistry::global().get(node);
  std::vector<const Tensor*> values(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (schema.is_value_input(static_cast<int>(i))) values[i] = inputs[i];
  check_node_inputs(schema, node, inputs);
  if (schema.op_class == OpClass::Comm && node.attrs.get_int("group_size", 1) > 1) {
    Tensor out = Tensor::uninitialized(inputs.at(0)->dtype(), infer_node(schema, node, types, values).at(0).shape);
    run_collective(comm_, node, *inputs[0], out);
    return {out};
  }
  NodeKernel& k = kernel_for(schema, node, types, values);
  std::vector<Tensor> outs;
  for (const TensorDesc& d : k.output_descs()) {
    try {
      outs.push_back(Tensor::uninitialized(d.dtype, d.shape));
    } catch (const GafError& e) {
      throw GafError("node '" + node.name + "' (" + node.op_type + "): output: " + e.what());
    }
  }
  std::vector<const Tensor*> data(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!schema.is_shape_only_input(static_cast<int>(i))) data[i] = inputs[i];
  k.run(data, outs);
  return outs;
}

std::vector<Tensor> ReferenceExecutor::run_node(const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<TensorDesc> descs(inputs.size());
  std::vector<const TensorDesc*> types(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    descs[i] = TensorDesc{inputs[i]->dtype(), inputs[i]->shape()};
    types[i] = &descs[i];
  }
  return run_node(node, inputs, types);
}

TensorMap ReferenceExecutor::run(const Graph& g, const TensorMap& given) {
  const std::map<std::string, int64_t> dims = check_graph_inputs(g, given);
  // Shapes computed from dynamic dims are constants whose contents depend on the run's dims.
  TensorMap with_shapes;
  if (!g.dynamic.empty()) {
    with_shapes = given;
    for (auto& [name, t] : symbolic_constants_at(g, dims)) with_shapes[name] = t;
  }
  const TensorMap& inputs = g.dynamic.empty() ? given : with_shapes;
  const std::vector<Node>& nodes = g.nodes();
  std::vector<int> order = g.topological_order();
  std::vector<std::vector<std::string>> reads;
  for (int i : order) reads.push_back(nodes[i].inputs);
  ValueStore store(g, inputs, reads);
  for (size_t s = 0; s < order.size(); ++s) {
    const Node& n = nodes[order[s]];
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty()) ins[i] = store.get(n.inputs[i]);
    std::vector<Tensor> outs = run_node(n, ins);
    store.finish_step(s, n.outputs, outs, n.inputs);
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, store.peak_bytes());
  return store.graph_outputs();
}

}  // namespace gaf
