#include "fusion/frontend/canonicalize.h"

#include "fusion/frontend/conv_transpose_rewrite.h"
#include "fusion/frontend/einsum_rewrite.h"

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

// B^T of a constant [N, K] float32 matrix, made when first read (planning reads no weight).
Tensor transposed(const Tensor& b) {
  const int64_t n = b.shape()[0], k = b.shape()[1];
  return Tensor::deferred(DType::Float32, {k, n}, [b, n, k](Tensor& out) {
    const float* src = b.data<float>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) dst[j * n + i] = src[i * k + j];
  });
}

// Gemm(A, B[, C]) with alpha = beta = 1, A not transposed and B a constant float32 matrix ->
// MatMul(A, B, or B^T as a constant of its own) [-> Add(., C)]. torch exports nn.Linear on a 2-D
// input so (transB = 1: B^T read along its columns); as a MatMul its weight is packed in panels
// and its bias and activation are an epilogue as for any projection. ResNet-50's classifier at
// batch 1 (2048 -> 1000): 2.7 ms as Gemm. The MatMul keeps the Gemm's name; the Add is
// "<name>/bias". Returns how many.
int gemm_as_matmul(Graph& g) {
  const Graph& cg = g;
  std::vector<Node> nodes;
  int rewritten = 0;
  for (const Node& n : cg.nodes()) {
    const bool has_c = n.inputs.size() == 3 && !n.inputs[2].empty();
    const Tensor* b =
        n.op_type == "Gemm" && n.inputs.size() >= 2 && cg.has_value(n.inputs[1]) && cg.value(n.inputs[1]).constant
            ? &*cg.value(n.inputs[1]).constant
            : nullptr;
    if (!b || b->dtype() != DType::Float32 || b->rank() != 2 || n.outputs.size() != 1 ||
        n.attrs.get_int("transA", 0) != 0 || n.attrs.get_float("alpha", 1.0f) != 1.0f ||
        (has_c && n.attrs.get_float("beta", 1.0f) != 1.0f) || !cg.value(n.inputs[0]).type.rank_known) {
      nodes.push_back(n);
      continue;
    }
    std::string w = n.inputs[1];
    if (n.attrs.get_int("transB", 0) != 0) {
      w = g.fresh_name(w + "_t");
      g.add_initializer(w, transposed(*b));
    }
    if (!has_c) {
      nodes.push_back(Node{n.name, "MatMul", {}, {n.inputs[0], w}, n.outputs});
    } else {
      const std::string mm = g.fresh_name(n.outputs[0] + "_mm");
      const Value& out = cg.value(n.outputs[0]);
      Value& v = g.add_value(mm, out.type);
      v.sym_dims = out.sym_dims;
      nodes.push_back(Node{n.name, "MatMul", {}, {n.inputs[0], w}, {mm}});
      nodes.push_back(Node{n.name + "/bias", "Add", {}, {mm, n.inputs[2]}, n.outputs});
    }
    ++rewritten;
  }
  if (rewritten) g.set_nodes(std::move(nodes));
  return rewritten;
}

// MatMul(W, Transpose(x)) with W a constant float32 [N, K] and the Transpose swapping x's last
// two axes (read by this MatMul only) -> Transpose(MatMul(x, W^T)), since W x^T = (x W^T)^T. A
// model that computes K^T directly (W_k x^T) then projects x as its Q and V do — one horizontal
// MatMul with them, the weight packed in panels as B — and the Transpose is a layout op its
// reader takes as a prologue. The MatMul keeps its name; the new Transpose is "<name>/transposed"
// (the one it read is dead then, for dead-node removal). Returns how many.
int const_a_matmul_as_projection(Graph& g) {
  const Graph& cg = g;
  std::map<std::string, int> readers;
  for (const Node& n : cg.nodes())
    for (const std::string& in : n.inputs) ++readers[in];
  for (const std::string& out : cg.outputs()) ++readers[out];
  std::vector<Node> nodes;
  int rewritten = 0;
  for (const Node& n : cg.nodes()) {
    nodes.push_back(n);
    if (n.op_type != "MatMul" || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    const Tensor* w = cg.value(n.inputs[0]).constant ? &*cg.value(n.inputs[0]).constant : nullptr;
    const int tp = cg.value(n.inputs[1]).producer;
    const Value& out = cg.value(n.outputs[0]);
    const size_t rank = out.type.dims.size();
    if (!w || w->dtype() != DType::Float32 || w->rank() != 2 || tp < 0 || !out.type.rank_known || rank < 2 ||
        readers[n.inputs[1]] != 1)
      continue;
    const Node& t = cg.nodes()[tp];
    std::vector<int64_t> swap_last(rank);
    for (size_t i = 0; i < rank; ++i) swap_last[i] = static_cast<int64_t>(i);
    std::swap(swap_last[rank - 1], swap_last[rank - 2]);
    if (t.op_type != "Transpose" || cg.value(t.inputs[0]).type.dims.size() != rank ||
        t.attrs.get_ints("perm", {}) != swap_last)
      continue;
    const std::string wt = g.fresh_name(n.inputs[0] + "_t"), mm = g.fresh_name(n.outputs[0] + "_rows");
    g.add_initializer(wt, transposed(*w));
    Value& v = g.add_value(mm, out.type);
    std::swap(v.type.dims[rank - 1], v.type.dims[rank - 2]);
    v.sym_dims = out.sym_dims;
    if (v.sym_dims.size() == rank) std::swap(v.sym_dims[rank - 1], v.sym_dims[rank - 2]);
    nodes.back() = Node{n.name, "MatMul", {}, {t.inputs[0], wt}, {mm}};
    Node back{n.name + "/transposed", "Transpose", {}, {mm}, n.outputs};
    back.attrs.set("perm", swap_last);
    nodes.push_back(std::move(back));
    ++rewritten;  // the Transpose it read is dead now: dead-node removal drops it
  }
  if (rewritten) g.set_nodes(std::move(nodes));
  return rewritten;
}

}  // namespace

int canonicalize(Graph& g) {
  int rewritten = bypass_noop_casts(g) + einsum_as_matmul(g) + gemm_as_matmul(g) + const_a_matmul_as_projection(g) +
                  patch_conv_transpose_as_conv(g);
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
