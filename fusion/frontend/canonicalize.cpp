#include "fusion/frontend/canonicalize.h"

namespace gaf {

namespace {

// The exponent is one constant equal to `v` (any rank, every element, float or int).
bool constant_equal(const Graph& g, const std::string& value, double v) {
  if (value.empty() || !g.has_value(value) || !g.value(value).constant) return false;
  const Tensor& t = *g.value(value).constant;
  if (t.numel() != 1) return false;
  return t.as_double(0) == v;
}

}  // namespace

int canonicalize(Graph& g) {
  int rewritten = 0;
  const Graph& cg = g;  // reads through the const view keep the node-name index valid
  for (size_t i = 0; i < cg.nodes().size(); ++i) {
    const Node& n = cg.nodes()[i];
    if (n.op_type != "Pow" || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    const std::string& x = n.inputs[0];
    // x * x keeps x's type; Pow's output takes the base's type too, so shapes stay valid only
    // when the exponent does not broadcast the result to a larger shape (a one-element exponent).
    if (!constant_equal(cg, n.inputs[1], 2.0) || !cg.has_value(x) || !cg.value(x).type.rank_known) continue;
    if (cg.value(n.outputs[0]).type.dims.size() != cg.value(x).type.dims.size()) continue;
    Node& m = g.nodes()[i];
    m.op_type = "Mul";
    m.inputs = {x, x};
    m.attrs = Attributes();
    ++rewritten;
  }
  return rewritten;
}

}  // namespace gaf
