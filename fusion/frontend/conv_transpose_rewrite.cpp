#include "fusion/frontend/conv_transpose_rewrite.h"

namespace gaf {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

const Tensor* constant_float(const Graph& g, const std::string& v) {
  const Tensor* t = g.constant(v);
  return t && t->dtype() == DType::Float32 ? t : nullptr;
}

// The patch size k when `n` is such a ConvTranspose (see the header), else 0.
int64_t patch_size(const Graph& g, const Node& n) {
  if (n.op_type != "ConvTranspose" || n.inputs.size() < 2 || n.outputs.size() != 1) return 0;
  const Value& x = g.value(n.inputs[0]);
  const Tensor* w = constant_float(g, n.inputs[1]);
  if (!x.type.rank_known || !x.type.is_static() || x.is_symbolic() || x.type.dtype != DType::Float32 ||
      x.type.shape().size() != 4 || !w || w->rank() != 4)
    return 0;
  const Shape& ws = w->shape();
  const int64_t k = ws[2];
  if (ws[3] != k || ws[0] != x.type.shape()[1]) return 0;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* b = constant_float(g, n.inputs[2]);
    if (!b || b->shape() != Shape{ws[1]}) return 0;
  }
  const Attributes& a = n.attrs;
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  if ((auto_pad != "NOTSET" && auto_pad != "VALID") || a.get_int("group", 1) != 1 ||
      a.get_ints("kernel_shape", {k, k}) != std::vector<int64_t>{k, k} ||
      a.get_ints("strides", {1, 1}) != std::vector<int64_t>{k, k} || !all_equal(a.get_ints("dilations", {}), 1) ||
      !all_equal(a.get_ints("pads", {}), 0) || !all_equal(a.get_ints("output_padding", {}), 0))
    return 0;
  const Shape& xs = x.type.shape();
  const std::vector<int64_t> out_shape = a.get_ints("output_shape", {});
  if (!out_shape.empty() && (out_shape.size() < 2 || out_shape[out_shape.size() - 2] != xs[2] * k ||
                             out_shape.back() != xs[3] * k))
    return 0;
  return k;
}

}  // namespace

int patch_conv_transpose_as_conv(Graph& g) {
  const Graph& cg = g;  // values and initializers are added below, nodes only at the end
  std::vector<Node> nodes;
  int rewritten = 0;
  for (const Node& n : cg.nodes()) {
    const int64_t k = patch_size(cg, n);
    if (k == 0) {
      nodes.push_back(n);
      continue;
    }
    const Tensor& w = *cg.constant(n.inputs[1]);
    const Shape xs = cg.value(n.inputs[0]).type.shape();
    const int64_t C = w.shape()[0], O = w.shape()[1], taps = k * k;
    Tensor wt(DType::Float32, {O * taps, C, 1, 1});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t c = 0; c < C; ++c)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t t = 0; t < taps; ++t) dst[(o * taps + t) * C + c] = src[(c * O + o) * taps + t];
    const std::string weight = g.fresh_name(n.inputs[1] + "_as_conv");
    g.add_initializer(weight, std::move(wt));
    const std::string conv = g.fresh_name(n.outputs[0] + "_taps");
    g.add_value(conv, TensorType(DType::Float32, {xs[0], O * taps, xs[2], xs[3]}));
    Node cv{n.name, "Conv", {}, {n.inputs[0], weight}, {conv}};
    cv.attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
    nodes.push_back(std::move(cv));
    const bool bias = n.inputs.size() > 2 && !n.inputs[2].empty();
    std::string patches = n.outputs[0];
    if (bias) {
      patches = g.fresh_name(n.outputs[0] + "_patches");
      g.add_value(patches, cg.value(n.outputs[0]).type);
    }
    Node d2s{n.name + "/patches", "DepthToSpace", {}, {conv}, {patches}};
    d2s.attrs.set("blocksize", k);
    d2s.attrs.set("mode", std::string("CRD"));
    nodes.push_back(std::move(d2s));
    if (bias) {
      const std::string bname = g.fresh_name(n.inputs[2] + "_per_channel");
      g.add_initializer(bname, cg.constant(n.inputs[2])->reshaped({O, 1, 1}));
      nodes.push_back(Node{n.name + "/bias", "Add", {}, {patches, bname}, n.outputs});
    }
    ++rewritten;
  }
  if (rewritten) g.set_nodes(std::move(nodes));
  return rewritten;
}

}  // namespace gaf
