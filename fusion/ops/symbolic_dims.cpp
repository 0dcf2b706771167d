#include "fusion/ops/symbolic_dims.h"

#include <cstring>

namespace gaf {

namespace {

std::string point_str(const SymBindings& b) {
  std::string s;
  for (const auto& [name, v] : b) s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return s;
}

// The largest int64 shape tensor whose elements are fitted one by one (a shape, a slice's ends).
constexpr int64_t kMaxSymbolicContents = 64;

}  // namespace

SymbolicDims::SymbolicDims(const SymbolRanges& dynamic, NodeEvaluatorFn eval)
    : sampler_(dynamic), eval_(std::move(eval)) {}

bool SymbolicDims::reads_symbolic(const Graph& g, const Node& n) {
  for (const std::string& in : n.inputs)
    if (!in.empty() && g.value(in).is_symbolic()) return true;
  return false;
}

SymbolicDims::PointInputs SymbolicDims::inputs_at(const Graph& g, const Node& n, size_t p, bool all_constants) const {
  const OpSchema& schema = OpRegistry::global().get(n);
  const SymBindings& point = sampler_.points()[p];
  PointInputs r;
  const size_t k = n.inputs.size();
  r.descs.resize(k);
  r.contents.resize(k);
  r.types.assign(k, nullptr);
  r.values.assign(k, nullptr);
  for (size_t i = 0; i < k; ++i) {
    if (n.inputs[i].empty()) continue;
    const Value& v = g.value(n.inputs[i]);
    r.descs[i] = TensorDesc{v.type.dtype, eval_shape(v.sym_shape(), point)};
    r.types[i] = &r.descs[i];
    if (!v.constant) continue;
    if (!all_constants && !schema.is_value_input(static_cast<int>(i))) continue;
    if (v.sym_contents.empty()) {
      r.values[i] = &*v.constant;
      continue;
    }
    r.contents[i] = Tensor(DType::Int64, v.constant->shape());
    for (size_t e = 0; e < v.sym_contents.size(); ++e) r.contents[i].data<int64_t>()[e] = v.sym_contents[e].eval(point);
    r.values[i] = &r.contents[i];
  }
  return r;
}

void SymbolicDims::fit_outputs(Graph& g, int idx) const {
  const Node n = g.nodes()[idx];
  const OpSchema& schema = OpRegistry::global().get(n);
  const size_t P = sampler_.points().size();
  std::vector<std::vector<TensorDesc>> at(P);
  for (size_t p = 1; p < P; ++p) {
    PointInputs in = inputs_at(g, n, p, false);
    try {
      at[p] = infer_node(schema, n, in.types, in.values);
    } catch (const GafError& e) {
      throw GafError("at " + point_str(sampler_.points()[p]) + " (inside the dynamic range): " + e.what() +
                     " — the model fixes a dim that is declared dynamic");
    }
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o].empty()) continue;
    Value& out = g.value(n.outputs[o]);
    const Shape rep = out.type.shape();
    SymShape dims;
    for (size_t d = 0; d < rep.size(); ++d) {
      std::vector<int64_t> seen{rep[d]};
      for (size_t p = 1; p < P; ++p) {
        if (at[p].at(o).shape.size() != rep.size())
          throw GafError("node '" + n.name + "': the rank of '" + out.name + "' depends on the dynamic dims");
        seen.push_back(at[p][o].shape[d]);
      }
      std::optional<SymExpr> e = sampler_.fit(seen);
      if (!e)
        throw GafError("node '" + n.name + "': dim " + std::to_string(d) + " of '" + out.name +
                       "' is not a polynomial in the dynamic dims (e.g. a division or a min of them); "
                       "give those dims one value with --dim NAME=VALUE");
      dims.push_back(*e);
    }
    out.sym_dims = is_static_shape(dims) ? SymShape{} : dims;
  }
}

bool SymbolicDims::fold_symbolic(Graph& g, int idx, const std::vector<Tensor>& outs) const {
  const Node n = g.nodes()[idx];
  const size_t P = sampler_.points().size();
  std::vector<std::vector<Tensor>> at(P);
  for (size_t p = 1; p < P; ++p) {
    PointInputs in = inputs_at(g, n, p, true);
    at[p] = eval_(n, in.values, in.types);
  }
  std::vector<std::vector<SymExpr>> contents(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o].empty()) continue;
    const Tensor& rep = outs.at(o);
    bool same = true;
    for (size_t p = 1; p < P; ++p)
      same = same && at[p][o].shape() == rep.shape() && at[p][o].nbytes() == rep.nbytes() &&
             std::memcmp(at[p][o].raw(), rep.raw(), rep.nbytes()) == 0;
    if (same) continue;
    if (rep.dtype() != DType::Int64 || rep.numel() > kMaxSymbolicContents) return false;
    for (int64_t e = 0; e < rep.numel(); ++e) {
      std::vector<int64_t> seen{rep.data<int64_t>()[e]};
      for (size_t p = 1; p < P; ++p) seen.push_back(at[p][o].data<int64_t>()[e]);
      std::optional<SymExpr> fit = sampler_.fit(seen);
      if (!fit) return false;  // not a polynomial: computed at run time instead, if it can be
      contents[o].push_back(*fit);
    }
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (!n.outputs[o].empty()) g.value(n.outputs[o]).sym_contents = std::move(contents[o]);
  return true;
}

std::map<std::string, Tensor> symbolic_constants_at(const Graph& g, const SymBindings& point) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, v] : g.values()) {
    if (v.sym_contents.empty() || !v.constant) continue;
    Tensor t(DType::Int64, v.constant->shape());
    for (size_t e = 0; e < v.sym_contents.size(); ++e) t.data<int64_t>()[e] = v.sym_contents[e].eval(point);
    out[name] = t;
  }
  return out;
}

Graph typed_at(const Graph& g, const SymBindings& point) {
  Graph t = g;
  for (auto& [name, v] : t.values()) {
    if (!v.sym_dims.empty()) {
      const Shape s = eval_shape(v.sym_dims, point);
      for (size_t d = 0; d < s.size(); ++d) v.type.dims[d].value = s[d];
    }
  }
  for (auto& [name, c] : symbolic_constants_at(g, point)) t.value(name).constant = c;
  return t;
}

void propagate_symbolic_dims(Graph& g) {
  if (g.dynamic.empty()) return;
  SymbolicDims sym(g.dynamic);
  for (int idx : g.topological_order()) {
    const Node& n = g.nodes()[idx];
    if (SymbolicDims::reads_symbolic(g, n)) {
      sym.fit_outputs(g, idx);
      continue;
    }
    for (const std::string& o : g.nodes()[idx].outputs)
      if (!o.empty()) g.value(o).sym_dims.clear();
  }
}

}  // namespace gaf
