// ConvTranspose (the gradient of Conv with respect to its input; a learned upsampling): any number
// of spatial axes, strides, dilations, pads or auto_pad, output_padding or output_shape, groups,
// an optional bias.
//   Y[n, o, p...] = B[o] + sum over (c, k...) of X[n, g*C/G + c, i...] * W[g*C/G + c, o % (O/G), k...],
//   g = o / (O/G), over the taps where p + pad_begin - k*dilation = i*stride with 0 <= i < X's extent.
// W is [C, O/G, k...]. Each output position gathers the taps that reach it.
//
// Op class: Opaque (runs as its own kernel).
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"
#include "fusion/ops/window.h"

namespace gaf {

using namespace Halide;

namespace {

struct TransposeShapes {
  std::vector<int64_t> kernel, strides, dilations, pad_begin;
  Shape out;  // [N, O, out spatial...]
  int64_t group = 1, group_channels = 1, group_outputs = 1;
};

TransposeShapes transpose_shapes(const InferContext& c) {
  c.check(c.rank(0) >= 3 && c.rank(1) == c.rank(0),
          "X " + shape_str(c.shape(0)) + " and W " + shape_str(c.shape(1)) + " must have the same rank >= 3");
  c.check(c.dtype(0) == DType::Float32 && c.dtype(1) == DType::Float32, "X and W must be float32");
  const Shape &x = c.shape(0), &w = c.shape(1);
  const Attributes& a = c.attrs();
  const size_t n = x.size() - 2;
  TransposeShapes s;
  s.kernel.assign(w.begin() + 2, w.end());
  const std::vector<int64_t> ks = a.get_ints("kernel_shape", s.kernel);
  c.check(ks == s.kernel,
          "kernel_shape " + ints_str(ks) + " differs from W's spatial shape " + shape_str(Shape(s.kernel)));
  s.group = a.get_int("group", 1);
  c.check(s.group >= 1 && x[1] % s.group == 0 && w[0] == x[1],
          "W's " + std::to_string(w[0]) + " input channels must be X's " + std::to_string(x[1]) +
              ", in group=" + std::to_string(s.group) + " groups");
  s.group_channels = x[1] / s.group;
  s.group_outputs = w[1];
  s.strides = a.get_ints("strides", std::vector<int64_t>(n, 1));
  s.dilations = a.get_ints("dilations", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> out_pad = a.get_ints("output_padding", std::vector<int64_t>(n, 0));
  c.check(s.strides.size() == n && s.dilations.size() == n && out_pad.size() == n,
          "strides " + ints_str(s.strides) + ", dilations " + ints_str(s.dilations) + " and output_padding " +
              ints_str(out_pad) + " must have " + std::to_string(n) + " values");
  for (size_t d = 0; d < n; ++d)
    c.check(s.strides[d] >= 1 && s.dilations[d] >= 1 && out_pad[d] >= 0,
            "strides and dilations must be positive, output_padding not negative");
  if (c.has_input(2)) {
    c.check(c.dtype(2) == DType::Float32, "B must be float32");
    c.check(c.shape(2) == Shape{w[1] * s.group},
            "B must be [" + std::to_string(w[1] * s.group) + "], got " + shape_str(c.shape(2)));
  }
  // Output extents: given (output_shape, the pads split from the total), or from the pads.
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  c.check(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER",
          "unsupported attribute auto_pad=" + auto_pad + " (NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  std::vector<int64_t> out_shape = a.get_ints("output_shape", {});
  if (out_shape.size() > n) out_shape.erase(out_shape.begin(), out_shape.end() - n);  // [N, C, spatial...] spelled
  c.check(out_shape.empty() || out_shape.size() == n,
          "output_shape " + ints_str(out_shape) + " must have " + std::to_string(n) + " values");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  c.check(pads.size() == 2 * n, "pads " + ints_str(pads) + " must have " + std::to_string(2 * n) + " values");
  s.out = {x[0], w[1] * s.group};
  s.pad_begin.assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    const int64_t full = s.strides[d] * (x[2 + d] - 1) + out_pad[d] + (s.kernel[d] - 1) * s.dilations[d] + 1;
    int64_t out = 0;
    if (!out_shape.empty() || same) {
      out = out_shape.empty() ? x[2 + d] * s.strides[d] : out_shape[d];
      // A negative total (an output_shape past the full output) pads the end: positions there
      // read no input (the bias only). Halves rounded down, as ONNX's reference does.
      const int64_t total = full - out, half = total >= 0 ? total / 2 : -((1 - total) / 2);
      s.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      c.check(pads[d] >= 0 && pads[n + d] >= 0, "pads " + ints_str(pads) + " must not be negative");
      s.pad_begin[d] = auto_pad == "VALID" ? 0 : pads[d];
      out = full - (auto_pad == "VALID" ? 0 : pads[d] + pads[n + d]);
      c.check(out >= 1, "pads " + ints_str(pads) + " leave an empty output");
    }
    s.out.push_back(out);
  }
  return s;
}

}  // namespace

void register_conv_transpose_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "ConvTranspose";
  s.op_class = OpClass::Opaque;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{DType::Float32, transpose_shapes(c).out}}; };
  s.build = [](BuildContext& b) {
    const TransposeShapes sh = transpose_shapes(b.infer());
    const TensorFunc &X = b.in(0), &W = b.in(1);
    const int spatial = static_cast<int>(sh.kernel.size());
    std::vector<Var> v = b.vars(static_cast<int>(sh.out.size()));  // n, o, p...
    // The taps that reach output position y along an axis: with dilation 1, k = (y + pad) mod s
    // + j*s for j < ceil(K / s), reading input (y + pad) / s - j — only they are iterated (a
    // 2x2/2 upsampling: one tap per axis, not four of which three are dropped: U-Net's 256-channel
    // one at 28 -> 56 took 48 ms). With a dilation, every tap, each kept where its position is a
    // multiple of the stride.
    bool dense = true;
    for (int64_t d : sh.dilations) dense = dense && d == 1;
    Region extents{{0, static_cast<int>(sh.group_channels)}};
    for (int d = spatial - 1; d >= 0; --d) {
      const int64_t k = sh.kernel[d], s = sh.strides[d];
      extents.emplace_back(0, static_cast<int>(dense ? (k + s - 1) / s : k));
    }
    RDom red(extents, b.prefix() + "_r");  // c, then the axes' taps innermost first
    const Expr o_in_group = v[1] % static_cast<int>(sh.group_outputs);
    const Expr channel = (v[1] / static_cast<int>(sh.group_outputs)) * static_cast<int>(sh.group_channels) + red[0];
    std::vector<Expr> xi{v[0], channel}, wi{channel, o_in_group};
    Expr taken = Internal::const_true();
    for (int d = 0; d < spatial; ++d) {
      const int stride = static_cast<int>(sh.strides[d]), kernel = static_cast<int>(sh.kernel[d]);
      const Expr y = v[2 + d] + static_cast<int>(sh.pad_begin[d]), j = red[spatial - d];
      Expr k, i;
      if (dense) {
        k = y % stride + j * stride;  // Halide's % and / round down: a negative y stays outside
        i = y / stride - j;
        taken = taken && k < kernel;
      } else {
        k = j;
        const Expr t = y - k * static_cast<int>(sh.dilations[d]);
        i = t / stride;
        taken = taken && t % stride == 0;
      }
      taken = taken && i >= 0 && i < X.dim(2 + d);
      xi.push_back(clamp(i, 0, X.dim(2 + d) - 1));
      wi.push_back(clamp(k, 0, kernel - 1));
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    Func acc = b.stage("acc", StageRole::Accumulator, rvars);
    const std::vector<Expr> at = halide_args(std::vector<Expr>(v.begin(), v.end()));
    acc(at) = b.has_input(2) ? b.in(2)({Expr(v[1])}) : Expr(0.0f);
    acc(at) += select(taken, X(xi) * W(wi), 0.0f);
    b.define_output(0, v, acc(at));
  };
  r.add(std::move(s));
}

}  // namespace gaf
