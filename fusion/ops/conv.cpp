// Conv, for the configuration a patch embedding uses (ViT: kernel = stride = patch): stride
// equal to the kernel, no padding, dilation 1, one group, any number of spatial axes. The
// windows then tile the input without overlap, so the convolution is a MatMul in index
// arithmetic: Y[n, o, p...] = B[o] + sum over (c, k...) of X[n, c, p * kernel + k ...] * W[o, c, k...].
// Any other configuration is refused at shape inference with one line naming the node and the
// attribute.
//
// Op class: Opaque (runs as its own kernel). The MatMul tile schedules read MatMul's own stage
// layout; a patch embedding runs once per model, so it is not worth a layout of its own yet.
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"

namespace gaf {

using namespace Halide;

namespace {

struct ConvShapes {
  int spatial = 0;       // number of spatial axes
  Shape kernel;          // per spatial axis
  Shape out;             // [N, O, out spatial...]
  int64_t channels = 0;  // C
};

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Shapes, after refusing every configuration this builder does not compute.
ConvShapes conv_shapes(const InferContext& c) {
  c.check(c.rank(0) >= 3 && c.rank(1) == c.rank(0),
          "X " + shape_str(c.shape(0)) + " and W " + shape_str(c.shape(1)) + " must have the same rank >= 3");
  c.check(c.dtype(0) == DType::Float32 && c.dtype(1) == DType::Float32, "X and W must be float32");
  const Shape &x = c.shape(0), &w = c.shape(1);
  ConvShapes s;
  s.spatial = c.rank(0) - 2;
  s.kernel = Shape(w.begin() + 2, w.end());
  s.channels = x[1];
  const std::string supported = " (supported: stride == kernel_shape, no padding, dilation 1, group 1)";
  const std::vector<int64_t> ks = c.attrs().get_ints("kernel_shape", s.kernel);
  c.check(ks == std::vector<int64_t>(s.kernel.begin(), s.kernel.end()),
          "kernel_shape " + ints_str(ks) + " differs from W's spatial shape " + shape_str(s.kernel));
  const int64_t group = c.attrs().get_int("group", 1);
  c.check(group == 1, "unsupported attribute group=" + std::to_string(group) + supported);
  const std::vector<int64_t> strides = c.attrs().get_ints("strides", std::vector<int64_t>(s.spatial, 1));
  c.check(strides == ks, "unsupported attribute strides=" + ints_str(strides) + " with kernel_shape " +
                             ints_str(ks) + supported);
  const std::vector<int64_t> dil = c.attrs().get_ints("dilations", std::vector<int64_t>(s.spatial, 1));
  c.check(dil == std::vector<int64_t>(s.spatial, 1), "unsupported attribute dilations=" + ints_str(dil) + supported);
  const std::vector<int64_t> pads = c.attrs().get_ints("pads", std::vector<int64_t>(2 * s.spatial, 0));
  c.check(pads == std::vector<int64_t>(2 * s.spatial, 0), "unsupported attribute pads=" + ints_str(pads) + supported);
  const std::string auto_pad = c.attrs().get_string("auto_pad", "NOTSET");
  c.check(auto_pad == "NOTSET" || auto_pad == "VALID", "unsupported attribute auto_pad=" + auto_pad + supported);
  c.check(w[1] == s.channels, "W has " + std::to_string(w[1]) + " input channels, X has " + std::to_string(s.channels));
  if (c.has_input(2)) {
    c.check(c.dtype(2) == DType::Float32, "B must be float32");
    c.check(c.shape(2) == Shape{w[0]}, "B must be [" + std::to_string(w[0]) + "], got " + shape_str(c.shape(2)));
  }
  s.out = {x[0], w[0]};
  for (int d = 0; d < s.spatial; ++d) {
    c.check(s.kernel[d] >= 1, "kernel_shape " + shape_str(s.kernel) + " has an empty axis");
    s.out.push_back(x[2 + d] / s.kernel[d]);  // windows that fit; a remainder is not read
  }
  return s;
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Conv";
  s.op_class = OpClass::Opaque;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{DType::Float32, conv_shapes(c).out}}; };
  s.build = [](BuildContext& b) {
    const ConvShapes sh = conv_shapes(b.infer());
    const TensorFunc &X = b.in(0), &W = b.in(1);
    std::vector<Var> v = b.vars(static_cast<int>(sh.out.size()));  // n, o, p...
    // The reduction runs over (c, k...): RDom dims innermost first, so the spatial k last-axis first.
    Region extents{{0, static_cast<int>(sh.channels)}};
    for (int d = 0; d < sh.spatial; ++d) extents.emplace_back(0, static_cast<int>(sh.kernel[d]));
    RDom red(extents, b.prefix() + "_r");
    std::vector<Expr> xi{v[0], red[0]}, wi{v[1], red[0]};
    for (int d = 0; d < sh.spatial; ++d) {
      xi.push_back(v[2 + d] * static_cast<int>(sh.kernel[d]) + red[1 + d]);
      wi.push_back(red[1 + d]);
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    Func acc = b.stage("acc", StageRole::Accumulator, rvars);
    std::vector<Expr> args(v.begin(), v.end());
    acc(halide_args(args)) = b.has_input(2) ? b.in(2)({Expr(v[1])}) : Expr(0.0f);
    acc(halide_args(args)) += X(xi) * W(wi);
    b.define_output(0, v, acc(halide_args(args)));
  };
  r.add(std::move(s));
}

}  // namespace gaf
