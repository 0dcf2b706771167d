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

// The flat form of a static 2-D Conv: the output rows laid end to end, p = y * pitch + x, and X
// split into stride_y x stride_x phases (phase (a, b) holds input rows sy * i + a - pad_top and
// columns sx * j + b - pad_left, at j < pitch), so that every tap of every stride reads the
// operand at p + a constant: tap (ky, kx) reads phase ((dy ky) % sy, (dx kx) % sx) at
// p + (dy ky / sy) * pitch + dx kx / sx. The pitch, ceil(padded width / sx), is at least the
// output width plus the taps' reach (the columns past the output's are computed and dropped). The
// host tiles it as a GEMM over p (whole vectors whatever the row width: 7-pixel rows waste half
// of 16 lanes in the 2-D tiles), the operand one pass over X. Unit stride: one phase of the padded
// input; a 1x1 Conv at stride 2 reads only phase (0, 0), X subsampled.
// A 1x1 kernel: one tap, at offset 0 in stride phase (0, 0).
bool one_tap(const Window& w) { return w.kernel == std::vector<int64_t>{1, 1}; }

FlatLayout flat_layout(const ConvShapes& sh, const TensorFunc& X) {
  const Window& w = sh.window;
  if (w.spatial() != 2 || !X.is_static()) return {};
  const int64_t padded_width = X.shape[3] + w.pad_begin[1] + w.pad_end[1];
  // A 1x1 Conv reads phase (0, 0) alone (X subsampled): one phase.
  FlatLayout flat{(padded_width + w.strides[1] - 1) / w.strides[1], one_tap(w) ? 1 : w.strides[0] * w.strides[1],
                  sh.group_outputs};
  // A 1x1 Conv without padding reads X at the output's positions alone: no border to test, and
  // at unit stride in place, no copy (the copy of ResNet-50's 3.2 MB 56x56 inputs, a gather
  // through the border's selects, cost as much as the 1x1 Convs' arithmetic). Outputs of at
  // least 64 pixels, so that a register tile fits inside one.
  flat.exact = !w.padded() && one_tap(w) && shape_numel(Shape(sh.out.begin() + 2, sh.out.end())) >= 64;
  flat.in_place = flat.exact && w.strides == std::vector<int64_t>{1, 1};
  return flat;
}

Expr bias_or_zero(BuildContext& b, const Var& o) { return b.has_input(2) ? b.in(2)({Expr(o)}) : Expr(0.0f); }

// Input channel of reduction step c for output channel o (groups: o's group's slice of X).
Expr input_channel(const ConvShapes& sh, const Expr& o, const Expr& c) {
  if (sh.group == 1) return c;
  return (o / static_cast<int>(sh.group_outputs)) * static_cast<int>(sh.group_channels) + c;
}

// The flat form (flat_layout): operand F(q, phase, c, n) = X at row sy * (q / pitch) + phase / sx
// - pad_top, column sx * (q % pitch) + phase % sx - pad_left, 0 outside X (an accumulator tile past
// the last row reads zeros); acc(p, o, n) = B[o] + sum over (c, ky, kx) of W[o, c, ky, kx] * F at
// the tap's phase and offset from p; Y[n, o, y, x] = acc(y * pitch + x, o, n).
void build_flat_conv(BuildContext& b, const ConvShapes& sh, FlatLayout flat, const std::vector<Var>& v) {
  const Window& w = sh.window;
  const TensorFunc &X = b.in(0), &W = b.in(1);
  const int pitch = static_cast<int>(flat.pitch);
  const int sy = static_cast<int>(w.strides[0]), sx = static_cast<int>(w.strides[1]);
  const int dy = static_cast<int>(w.dilations[0]), dx = static_cast<int>(w.dilations[1]);
  Var q(b.prefix() + "_q"), phase(b.prefix() + "_phase"), c(b.prefix() + "_c"), n(b.prefix() + "_n");
  Func operand = b.stage("flat", StageRole::Operand, {}, flat);
  // Exact: no border. In place, q % pitch + (q / pitch) * pitch folds into q once X's strides
  // are known (dense loads).
  if (flat.exact) {
    operand(q, phase, c, n) = X.func(sx * (q % pitch), sy * (q / pitch), c, n);
  } else {
    Func inside = BoundaryConditions::constant_exterior(
        X.func, 0.0f, Region{{0, X.dim(3)}, {0, X.dim(2)}, {Expr(), Expr()}, {Expr(), Expr()}});
    operand(q, phase, c, n) = inside(sx * (q % pitch) + phase % sx - static_cast<int>(w.pad_begin[1]),
                                     sy * (q / pitch) + phase / sx - static_cast<int>(w.pad_begin[0]), c, n);
  }
  RDom red({{0, static_cast<int>(sh.group_channels)},
            {0, static_cast<int>(w.kernel[0])},
            {0, static_cast<int>(w.kernel[1])}},
           b.prefix() + "_r");
  Var p(b.prefix() + "_p"), o(b.prefix() + "_o");
  Func acc = b.stage("acc", StageRole::Accumulator, {red[0], red[1], red[2]}, flat);
  Expr ky = red[1] * dy, kx = red[2] * dx;
  // A 1x1 Conv's one tap: offset 0 in phase 0 (bounds inference cannot see that r % s is 0 there,
  // and a strided 1x1 Conv's operand was computed for every phase, 4x the work).
  Expr offset = one_tap(w) ? Expr(0) : (ky / sy) * pitch + kx / sx;
  Expr tap_phase = one_tap(w) ? Expr(0) : (ky % sy) * sx + kx % sx;
  acc(p, o, n) = bias_or_zero(b, o);
  acc(p, o, n) +=
      operand(p + offset, tap_phase, input_channel(sh, o, red[0]), n) * W({Expr(o), red[0], red[1], red[2]});
  b.define_output(0, v, acc(v[3] + v[2] * pitch, v[1], v[0]));
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
    if (const FlatLayout flat = flat_layout(sh, X); flat.pitch > 0) {
      build_flat_conv(b, sh, flat, v);
      return;
    }
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
    std::vector<Expr> xi{v[0], input_channel(sh, v[1], red[0])}, wi{v[1], red[0]};
    for (int d = 0; d < w.spatial(); ++d) {
      xi.push_back(v[2 + d] * static_cast<int>(w.strides[d]) + red[1 + d] * static_cast<int>(w.dilations[d]));
      wi.push_back(red[1 + d]);
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    Func acc = b.stage("acc", StageRole::Accumulator, rvars);
    std::vector<Expr> args(v.begin(), v.end());
    acc(halide_args(args)) = bias_or_zero(b, v[1]);
    acc(halide_args(args)) += padded(halide_args(xi)) * W(wi);
    b.define_output(0, v, acc(halide_args(args)));
  };
  r.add(std::move(s));
}

}  // namespace gaf
