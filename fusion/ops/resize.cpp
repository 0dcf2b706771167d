// Resize (opset 11+): nearest or (multi)linear interpolation of any axes, to `sizes` or by `scales`
// (value inputs; roi only for tf_crop_and_resize, which is refused). Output position x of an axis
// (input extent in, output extent out, scale = out / in when sizes are given) maps to the input
// coordinate of coordinate_transformation_mode:
//   half_pixel (default)  (x + 0.5) / scale - 0.5
//   pytorch_half_pixel    the same, 0 where out = 1
//   align_corners         x * (in - 1) / (out - 1), 0 where out = 1
//   asymmetric            x / scale
//   tf_half_pixel_for_nn  (x + 0.5) / scale
// nearest reads the input there rounded by nearest_mode (round_prefer_floor by default,
// round_prefer_ceil, floor, ceil) and clamped into the axis; linear weighs the two neighbours
// floor(c) and floor(c) + 1, each clamped into the axis (the edge value past either end), and
// multiplies the weights of every resized axis. Coordinates are computed in float64, as ONNX's
// reference does, so that a coordinate on a rounding boundary rounds the same.
// Op class: Opaque (runs as its own kernel).
#include <cmath>

#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"
#include "fusion/ops/window.h"

namespace gaf {

using namespace Halide;

namespace {

struct ResizeSpec {
  std::string mode, coordinates, nearest;
  Shape out;
  std::vector<double> scales;  // per axis
};

ResizeSpec resize_spec(const InferContext& c) {
  const Attributes& a = c.attrs();
  const Shape& x = c.shape(0);
  const size_t rank = x.size();
  ResizeSpec s;
  s.mode = a.get_string("mode", "nearest");
  c.check(s.mode == "nearest" || s.mode == "linear", "unsupported attribute mode=" + s.mode + " (nearest or linear)");
  s.coordinates = a.get_string("coordinate_transformation_mode", "half_pixel");
  c.check(s.coordinates == "half_pixel" || s.coordinates == "pytorch_half_pixel" || s.coordinates == "align_corners" ||
              s.coordinates == "asymmetric" || s.coordinates == "tf_half_pixel_for_nn",
          "unsupported attribute coordinate_transformation_mode=" + s.coordinates +
              " (half_pixel, pytorch_half_pixel, align_corners, asymmetric or tf_half_pixel_for_nn)");
  s.nearest = a.get_string("nearest_mode", "round_prefer_floor");
  c.check(
      s.nearest == "round_prefer_floor" || s.nearest == "round_prefer_ceil" || s.nearest == "floor" ||
          s.nearest == "ceil",
      "unsupported attribute nearest_mode=" + s.nearest + " (round_prefer_floor, round_prefer_ceil, floor or ceil)");
  c.check(a.get_int("antialias", 0) == 0, "unsupported attribute antialias=1");
  c.check(!a.has("axes"), "unsupported attribute axes (resize every axis)");
  c.check(c.num_inputs() >= 3, "unsupported attribute: opset-10 Resize (X, scales); export at opset 11 or later");
  const bool has_sizes = c.has_input(3) && c.value(3).numel() > 0;
  const bool has_scales = c.has_input(2) && c.value(2).numel() > 0;
  c.check(has_sizes != has_scales, "exactly one of scales and sizes must be given");
  s.out.resize(rank);
  s.scales.resize(rank);
  if (has_sizes) {
    const std::vector<int64_t> sizes = c.value(3).to_int_vector();
    c.check(sizes.size() == rank, "sizes " + ints_str(sizes) + " must have " + std::to_string(rank) + " values");
    for (size_t d = 0; d < rank; ++d) {
      c.check(sizes[d] >= 1, "sizes " + ints_str(sizes) + " must be positive");
      s.out[d] = sizes[d];
      s.scales[d] = static_cast<double>(sizes[d]) / static_cast<double>(x[d]);
    }
  } else {
    const Tensor& t = c.value(2);
    c.check(t.numel() == static_cast<int64_t>(rank),
            "scales must have " + std::to_string(rank) + " values, got " + std::to_string(t.numel()));
    for (size_t d = 0; d < rank; ++d) {
      // As float32: scales are a float tensor and ONNX's reference rounds through it.
      s.scales[d] = static_cast<double>(static_cast<float>(t.as_double(d)));
      c.check(s.scales[d] > 0, "scales must be positive");
      s.out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x[d]) * s.scales[d]));
      c.check(s.out[d] >= 1, "scales leave axis " + std::to_string(d) + " empty");
    }
  }
  return s;
}

Expr f64(double v) { return Internal::make_const(Float(64), v); }

// The input coordinate of output position `x` along an axis (float64, strict: a division turned
// into a multiplication by the reciprocal moved 0.5 to 0.5000000000000001, so the nearest
// neighbour of a position on a rounding boundary was the other one). The resized length is
// in * scale, unrounded, as ONNX's reference takes it (align_corners at scale 0.6: 4 -> 2.4).
Expr source_coordinate(const ResizeSpec& s, const Expr& x, int64_t in, double scale) {
  const Expr xd = cast<double>(x), half = f64(0.5), sc = f64(scale);
  const double resized = static_cast<double>(in) * scale;
  Expr c;
  if (s.coordinates == "asymmetric") {
    c = xd / sc;
  } else if (s.coordinates == "tf_half_pixel_for_nn") {
    c = (xd + half) / sc;
  } else if (s.coordinates == "align_corners") {
    if (resized == 1.0) return f64(0.0);
    c = xd * f64(static_cast<double>(in - 1)) / f64(resized - 1.0);
  } else {
    if (s.coordinates == "pytorch_half_pixel" && resized <= 1.0) return f64(0.0);
    c = (xd + half) / sc - half;
  }
  return strict_float(c);
}

Expr nearest_index(const ResizeSpec& s, const Expr& c) {
  const Expr f = floor(c), half = f64(0.5);
  if (s.nearest == "floor") return cast<int>(f);
  if (s.nearest == "ceil") return cast<int>(ceil(c));
  const Expr on_half = c - f == half;
  if (s.nearest == "round_prefer_floor") return cast<int>(select(on_half, f, floor(c + half)));
  return cast<int>(select(on_half, f + f64(1.0), floor(c + half)));  // round_prefer_ceil
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Resize";
  s.op_class = OpClass::Opaque;
  s.max_inputs = 4;
  s.value_inputs = {1, 2, 3};
  s.infer = [](const InferContext& c) {
    c.check(c.dtype(0) == DType::Float32, "X must be float32");
    return std::vector<TensorDesc>{{DType::Float32, resize_spec(c).out}};
  };
  s.build = [](BuildContext& b) {
    const ResizeSpec sp = resize_spec(b.infer());
    const TensorFunc& X = b.in(0);
    const int rank = X.rank();
    std::vector<Var> v = b.vars(rank);
    // Per axis: the index of each neighbour and its weight (one neighbour, weight 1, for an axis
    // read as is or in nearest mode).
    std::vector<std::vector<std::pair<Expr, Expr>>> taps(rank);
    for (int d = 0; d < rank; ++d) {
      const int64_t in = X.shape[d], out = sp.out[d];
      const Expr last = static_cast<int>(in - 1);
      if (in == out && sp.scales[d] == 1.0 && sp.coordinates != "tf_half_pixel_for_nn") {
        taps[d] = {{Expr(v[d]), Expr(1.0f)}};
        continue;
      }
      Expr c = source_coordinate(sp, v[d], in, sp.scales[d]);
      if (sp.mode == "nearest") {
        taps[d] = {{clamp(nearest_index(sp, c), 0, last), Expr(1.0f)}};
        continue;
      }
      Expr f = floor(c), w = cast<float>(c - f), i0 = cast<int>(f);
      taps[d] = {{clamp(i0, 0, last), 1.0f - w}, {clamp(i0 + 1, 0, last), w}};
    }
    // The sum over every combination of the axes' taps (2^k terms for k linear axes).
    Expr sum;
    std::vector<size_t> pick(rank, 0);
    while (true) {
      std::vector<Expr> idx(rank);
      Expr weight;
      for (int d = 0; d < rank; ++d) {
        idx[d] = taps[d][pick[d]].first;
        if (taps[d].size() > 1) weight = weight.defined() ? weight * taps[d][pick[d]].second : taps[d][pick[d]].second;
      }
      Expr term = weight.defined() ? X(idx) * weight : X(idx);
      sum = sum.defined() ? sum + term : term;
      int d = rank - 1;
      while (d >= 0 && ++pick[d] == taps[d].size()) pick[d--] = 0;
      if (d < 0) break;
    }
    b.define_output(0, v, sum);
  };
  r.add(std::move(s));
}

}  // namespace gaf
