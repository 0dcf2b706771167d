#include "fusion/frontend/dequantized_matmul.h"

#include <optional>

namespace gaf {

namespace {

const Node* producer_of(const Graph& g, const std::string& value) {
  if (value.empty() || !g.has_value(value)) return nullptr;
  const int p = g.value(value).producer;
  return p < 0 ? nullptr : &g.nodes()[p];
}

// A per-tensor (one element) or per-column ([N]) constant's value for column n.
bool per_column(const Tensor* t, int64_t N) { return t && (t->numel() == 1 || (t->rank() == 1 && t->shape()[0] == N)); }
double at_column(const Tensor& t, int64_t n) { return t.as_double(t.numel() == 1 ? 0 : n); }

struct DequantizedMatMul {
  std::string x;   // the float input of DynamicQuantizeLinear
  Tensor weights;  // (Wq - Wzp) * Ws, float32 [K, N]
};

// y = Mul(Cast(MatMulInteger(...)), Mul(xs, Ws)) in either operand order, as the header says.
std::optional<DequantizedMatMul> match(const Graph& g, const Node& n) {
  if (n.op_type != "Mul" || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Node* cast = producer_of(g, n.inputs[side]);
    const Node* scales = producer_of(g, n.inputs[1 - side]);
    if (!cast || cast->op_type != "Cast" || cast->attrs.get_int("to", 0) != 1 || !scales || scales->op_type != "Mul" ||
        scales->inputs.size() != 2)
      continue;
    const Node* mm = producer_of(g, cast->inputs[0]);
    if (!mm || mm->op_type != "MatMulInteger" || mm->inputs.size() < 3) continue;
    const Node* dql = producer_of(g, mm->inputs[0]);
    if (!dql || dql->op_type != "DynamicQuantizeLinear" || dql->outputs.size() != 3 || mm->inputs[2] != dql->outputs[2])
      continue;
    // Mul(xs, Ws) in either order.
    const int xs_side = scales->inputs[0] == dql->outputs[1] ? 0 : scales->inputs[1] == dql->outputs[1] ? 1 : -1;
    if (xs_side < 0) continue;
    const Tensor* wq = g.constant(mm->inputs[1]);
    const Tensor* ws = g.constant(scales->inputs[1 - xs_side]);
    const Tensor* wzp = mm->inputs.size() > 3 ? g.constant(mm->inputs[3]) : nullptr;
    if (!wq || wq->rank() != 2 || (wq->dtype() != DType::Int8 && wq->dtype() != DType::UInt8) || !ws ||
        ws->dtype() != DType::Float32)
      continue;
    const int64_t K = wq->shape()[0], N = wq->shape()[1];
    if (!per_column(ws, N) || (mm->inputs.size() > 3 && !mm->inputs[3].empty() && !per_column(wzp, N))) continue;
    DequantizedMatMul d{dql->inputs[0], Tensor(DType::Float32, {K, N})};
    float* w = d.weights.data<float>();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c)
        w[k * N + c] =
            static_cast<float>((wq->as_double(k * N + c) - (wzp ? at_column(*wzp, c) : 0.0)) * at_column(*ws, c));
    return d;
  }
  return std::nullopt;
}

}  // namespace

int rewrite_dequantized_matmuls(Graph& g) {
  int rewritten = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Graph& cg = g;
    std::optional<DequantizedMatMul> d = match(cg, cg.nodes()[i]);
    if (!d) continue;
    Node& n = g.nodes()[i];
    std::string w = n.name + "/dequantized_weights";
    while (g.has_value(w)) w += "_";
    g.add_initializer(w, std::move(d->weights));
    Node mm{n.name, "MatMul", {}, {d->x, w}, n.outputs};
    mm.attrs.set("_int8_weights", int64_t{1});
    mm.attrs.set("_opset", n.attrs.get_int("_opset", 13));
    g.nodes()[i] = std::move(mm);  // same name and output
    ++rewritten;
  }
  return rewritten;
}

}  // namespace gaf
