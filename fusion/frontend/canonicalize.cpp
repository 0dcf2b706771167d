#include "fusion/frontend/canonicalize.h"

#include <map>
#include <optional>
#include <set>

namespace gaf {

namespace {

// The exponent is one constant equal to `v` (any rank, every element, float or int).
bool constant_equal(const Graph& g, const std::string& value, double v) {
  if (value.empty() || !g.has_value(value) || !g.value(value).constant) return false;
  const Tensor& t = *g.value(value).constant;
  if (t.numel() != 1) return false;
  return t.as_double(0) == v;
}

// The node's output has x's rank: replacing the node by a unary op of x keeps every shape (a
// one-element constant operand broadcasting to a higher rank would not).
bool keeps_rank_of(const Graph& g, const Node& n, const std::string& x) {
  return g.has_value(x) && g.value(x).type.rank_known &&
         g.value(n.outputs[0]).type.dims.size() == g.value(x).type.dims.size();
}

// Pow(x, 2) -> Mul(x, x): a general pow per element costs a log and an exp, and LayerNorm's
// variance is written with it.
std::optional<Node> square_as_mul(const Graph& g, const Node& n) {
  if (n.op_type != "Pow" || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const std::string& x = n.inputs[0];
  if (!constant_equal(g, n.inputs[1], 2.0) || !keeps_rank_of(g, n, x)) return std::nullopt;
  return Node{n.name, "Mul", {}, {x, x}, n.outputs};
}

// Div(1, y) -> Reciprocal(y): torch.rsqrt is exported as Div(1, Sqrt(.)), which the
// normalization patterns then read as their Reciprocal spelling (RMSNorm's x * rsqrt(ms + eps)).
std::optional<Node> unit_div_as_reciprocal(const Graph& g, const Node& n) {
  if (n.op_type != "Div" || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const std::string& y = n.inputs[1];
  if (!constant_equal(g, n.inputs[0], 1.0) || !keeps_rank_of(g, n, y)) return std::nullopt;
  if (g.value(y).type.dtype != DType::Float32) return std::nullopt;  // integer 1 / y truncates
  return Node{n.name, "Reciprocal", {}, {y}, n.outputs};
}

// Consumers of a Cast to the dtype its input already has read the input instead (the Cast is then
// dead): T5's `softmax(scores.float())` and its RMS norm of `x.to(float32)` put such a Cast
// between the ops a rule matches. A Cast that is a graph output stays. Returns how many.
int bypass_noop_casts(Graph& g) {
  std::map<std::string, std::string> source;  // a no-op Cast's output -> its input
  std::set<std::string> outputs(g.outputs().begin(), g.outputs().end());
  const Graph& cg = g;
  for (const Node& n : cg.nodes()) {
    if (n.op_type != "Cast" || n.inputs.size() != 1 || n.outputs.size() != 1 || outputs.count(n.outputs[0])) continue;
    const std::optional<DType> to = dtype_of_onnx(static_cast<int>(n.attrs.get_int("to", -1)));
    if (!to || !cg.has_value(n.inputs[0]) || cg.value(n.inputs[0]).type.dtype != *to) continue;
    source[n.outputs[0]] = n.inputs[0];
  }
  if (source.empty()) return 0;
  for (Node& n : g.nodes())
    for (std::string& in : n.inputs)
      for (auto s = source.find(in); s != source.end(); s = source.find(in)) in = s->second;  // Cast of a Cast
  return static_cast<int>(source.size());
}

}  // namespace

int canonicalize(Graph& g) {
  int rewritten = bypass_noop_casts(g);
  const Graph& cg = g;  // reads through the const view keep the node-name index valid
  for (size_t i = 0; i < cg.nodes().size(); ++i) {
    const Node& n = cg.nodes()[i];
    std::optional<Node> r = square_as_mul(cg, n);
    if (!r) r = unit_div_as_reciprocal(cg, n);
    if (!r) continue;
    g.nodes()[i] = std::move(*r);  // same name and outputs: only the op and its operands change
    ++rewritten;
  }
  return rewritten;
}

}  // namespace gaf
