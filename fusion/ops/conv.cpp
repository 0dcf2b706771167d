// Conv in every configuration ONNX defines: any number of spatial axes, strides, dilations, pads
// or auto_pad, groups (depthwise when group = C), an optional bias.
//   Y[n, o, p...] = B[o] + sum over (c, k...) of X[n, g*C/G + c, p*stride + k*dilation - pad_begin ...]
//                                                * W[o, c, k...],   g = o / (O/G)
// with X read as 0 outside its extents (the padding).
//
// Op class: Opaque (runs as its own kernel, scheduled as a plain reduction).
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"
#include "fusion/ops/window.h"

namespace gaf {

using namespace Halide;

namespace {

struct ConvShapes {
  Window window;
  Shape out;  // [N, O, out spatial...]
  int64_t group = 1;
  int64_t group_channels;  // C / group: W's input channels
  int64_t group_outputs;   // O / group
};

ConvShapes conv_shapes(const InferContext& c) {
  c.check(c.rank(0) >= 3 && c.rank(1) == c.rank(0),
          "X " + shape_str(c.shape(0)) + " and W " + shape_str(c.shape(1)) + " must have the same rank >= 3");
  c.check(c.dtype(0) == DType::Float32 && c.dtype(1) == DType::Float32, "X and W must be float32");
  const Shape &x = c.shape(0), &w = c.shape(1);
  const std::vector<int64_t> kernel(w.begin() + 2, w.end());
  const std::vector<int64_t> ks = c.attrs().get_ints("kernel_shape", kernel);
  c.check(ks == kernel, "kernel_shape " + ints_str(ks) + " differs from W's spatial shape " + shape_str(Shape(kernel)));
  ConvShapes s;
  s.group = c.attrs().get_int("group", 1);
  c.check(s.group >= 1 && x[1] % s.group == 0 && w[0] % s.group == 0,
          "group=" + std::to_string(s.group) + " must divide X's " + std::to_string(x[1]) + " channels and W's " +
              std::to_string(w[0]) + " outputs");
  s.group_channels = x[1] / s.group;
  s.group_outputs = w[0] / s.group;
  c.check(w[1] == s.group_channels, "W has " + std::to_string(w[1]) + " input channels per group, X has " +
                                        std::to_string(x[1]) + " channels in " + std::to_string(s.group) + " group(s)");
  if (c.has_input(2)) {
    c.check(c.dtype(2) == DType::Float32, "B must be float32");
    c.check(c.shape(2) == Shape{w[0]}, "B must be [" + std::to_string(w[0]) + "], got " + shape_str(c.shape(2)));
  }
  s.window = window_of(c, Shape(x.begin() + 2, x.end()), kernel);
  s.out = {x[0], w[0]};
  s.out.insert(s.out.end(), s.window.out.begin(), s.window.out.end());
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
    const Window& w = sh.window;
    const TensorFunc &X = b.in(0), &W = b.in(1);
    std::vector<Var> v = b.vars(static_cast<int>(sh.out.size()));  // n, o, p...
    // X as the window reads it, in padded coordinates (position + pad_begin): 0 in the padding,
    // and clamped into X past it (a register tile wider than a short row computes lanes beyond
    // its end, never stored, which must still read inside X). An Operand: the host's conv tiles
    // compute it once per run (schedules/conv_schedule.h), so their loads are dense rows
    // without clamps or selects; elsewhere it is inlined.
    std::vector<Var> pv = b.vars(X.rank());
    std::vector<Expr> pi{pv[0], pv[1]};
    Expr inside = Internal::const_true();
    for (int d = 0; d < w.spatial(); ++d) {
      Expr q = pv[2 + d] - static_cast<int>(w.pad_begin[d]);
      if (w.padded()) inside = inside && q >= 0 && q < X.dim(2 + d);
      pi.push_back(clamp(q, 0, X.dim(2 + d) - 1));
    }
    Func padded = b.stage("padded", StageRole::Operand);
    padded(halide_args(pv)) = w.padded() ? select(inside, X(pi), 0.0f) : X(pi);
    // The reduction runs over (c, k...): RDom dims innermost first, so the spatial k last-axis first.
    Region extents{{0, static_cast<int>(sh.group_channels)}};
    for (int d = 0; d < w.spatial(); ++d) extents.emplace_back(0, static_cast<int>(w.kernel[d]));
    RDom red(extents, b.prefix() + "_r");
    Expr channel = sh.group == 1
                       ? Expr(red[0])
                       : (v[1] / static_cast<int>(sh.group_outputs)) * static_cast<int>(sh.group_channels) + red[0];
    std::vector<Expr> xi{v[0], channel}, wi{v[1], red[0]};
    for (int d = 0; d < w.spatial(); ++d) {
      xi.push_back(v[2 + d] * static_cast<int>(w.strides[d]) + red[1 + d] * static_cast<int>(w.dilations[d]));
      wi.push_back(red[1 + d]);
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    Func acc = b.stage("acc", StageRole::Accumulator, rvars);
    std::vector<Expr> args(v.begin(), v.end());
    acc(halide_args(args)) = b.has_input(2) ? b.in(2)({Expr(v[1])}) : Expr(0.0f);
    acc(halide_args(args)) += padded(halide_args(xi)) * W(wi);
    b.define_output(0, v, acc(halide_args(args)));
  };
  r.add(std::move(s));
}

}  // namespace gaf
