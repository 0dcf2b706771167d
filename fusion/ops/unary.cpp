// Unary elementwise ops: math functions, activations, rounding, Sign, IsNaN/IsInf, Clip, Cast,
// Not, Identity, Dropout.
#include <climits>
#include <random>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"
#include "fusion/ops/low_precision.h"
#include "fusion/ops/math.h"

namespace gaf {

using namespace Halide;

namespace {

Expr f32(float v) { return Expr(v); }

DType cast_target(const InferContext& c) {
  int64_t to = c.attrs().get_int("to", -1);
  std::optional<DType> d = to >= 0 && to <= INT32_MAX ? dtype_of_onnx(static_cast<int>(to)) : std::nullopt;
  if (!d) c.fail("Cast to ONNX type " + std::to_string(to) + " is not supported (" + kSupportedOnnxTypes + " are)");
  return *d;
}

// Cast: fp16/bf16 go through float32 both ways (rounded to nearest even on the way down). Float
// to int8/uint8/int32 truncates toward zero and saturates: ONNX leaves out-of-range values
// undefined, and a plain conversion would be undefined in the generated code as well. Integer
// narrowing wraps (two's complement), as ONNX's reference does.
Expr cast_expr(DType to, Expr x) {
  if (x.type().is_float() && x.type().bits() == 16) x = to_f32(x);
  switch (to) {
    case DType::Bool: return from_bool(as_bool(x));
    case DType::Float16: return f32_to_fp16(cast(Float(32), x));
    case DType::BFloat16: return f32_to_bf16(cast(Float(32), x));
    case DType::Int8:
    case DType::UInt8:
    case DType::Int32:
      if (x.type().is_float()) return saturating_cast(halide_type(to), x);
      return cast(halide_type(to), x);
    case DType::Float32:
    case DType::Int64: break;
  }
  return cast(halide_type(to), x);
}

// Clip: bounds come from attributes (opset < 11) or from optional scalar inputs 1 and 2.
void add_clip(OpRegistry& r) {
  OpSchema s;
  s.name = "Clip";
  s.op_class = OpClass::Broadcast;  // min/max are rank-0 inputs read at every element
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) {
    for (int i = 1; i < 3; ++i)
      if (c.has_input(i)) c.check(shape_numel(c.shape(i)) == 1, "min/max must be scalars");
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    std::vector<Var> v = b.vars(b.in(0).rank());
    Expr x = b.in(0)(v);
    Type t = x.type();
    auto scalar = [&](int i) {
      std::vector<Expr> zero(b.in(i).rank(), Expr(0));
      return cast(t, b.in(i)(zero));
    };
    if (b.has_input(1))
      x = max(x, scalar(1));
    else if (b.attrs().has("min"))
      x = max(x, cast(t, b.attrs().get_float("min", 0)));
    if (b.has_input(2))
      x = min(x, scalar(2));
    else if (b.attrs().has("max"))
      x = min(x, cast(t, b.attrs().get_float("max", 0)));
    b.define_output(0, v, x);
  };
  r.add(std::move(s));
}

// numpy's legacy RandomState(seed).uniform(0, 1, n): MT19937 (init_genrand) and 53-bit doubles.
// ONNX's reference Dropout draws its mask this way, so a seeded training-mode Dropout matches it.
std::vector<uint8_t> numpy_dropout_keep_mask(uint32_t seed, int64_t n, double ratio) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> keep(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint32_t a = gen() >> 5, bb = gen() >> 6;
    double u = (a * 67108864.0 + bb) / 9007199254740992.0;
    keep[i] = u >= ratio ? 1 : 0;
  }
  return keep;
}

// Dropout: identity at inference (mask all true). Training mode (opset 12+: input 2) needs a
// seed so that the result is reproducible; the mask is drawn at compile time and embedded.
void add_dropout(OpRegistry& r) {
  OpSchema s;
  s.name = "Dropout";
  s.op_class = OpClass::Elementwise;
  s.max_inputs = 3;
  s.max_outputs = 2;
  s.value_inputs = {1, 2};
  s.infer = [](const InferContext& c) {
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}, {DType::Bool, c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    const InferContext& c = b.infer();
    bool training = c.has_input(2) && c.value(2).as_int(0) != 0;
    double ratio = c.has_input(1) ? c.value(1).as_double(0) : b.attrs().get_float("ratio", 0.5f);
    std::vector<Var> v = b.vars(b.in(0).rank());
    Expr x = b.in(0)(v);
    if (!training || ratio == 0.0) {
      b.define_output(0, v, x);
      if (b.num_outputs() > 1) b.define_output(1, v, cast<uint8_t>(1));
      return;
    }
    if (!b.attrs().has("seed"))
      c.fail("training-mode Dropout without a 'seed' attribute is not reproducible; set a seed");
    // The mask is drawn at compile time for the whole tensor, so its extents must be known.
    c.check(b.in(0).is_static(), "training-mode Dropout needs static extents (its mask is a constant)");
    Tensor mask(DType::Bool, b.in(0).shape);
    std::vector<uint8_t> keep =
        numpy_dropout_keep_mask(static_cast<uint32_t>(b.attrs().get_int("seed", 0)), mask.numel(), ratio);
    std::copy(keep.begin(), keep.end(), mask.data<uint8_t>());
    TensorFunc m = b.constant(mask, "mask");
    float scale = static_cast<float>(1.0 / (1.0 - ratio));
    b.define_output(0, v, select(as_bool(m(v)), x * scale, cast(x.type(), 0)));
    if (b.num_outputs() > 1) b.define_output(1, v, m(v));
  };
  s.foldable = false;
  r.add(std::move(s));
}

}  // namespace

void register_unary_ops(OpRegistry& r) {
  add_unary_op(r, "Identity", [](const BuildContext&, const Expr& x) { return x; });
  add_unary_op(r, "Neg", [](const BuildContext&, const Expr& x) { return -x; });
  add_unary_op(r, "Abs", [](const BuildContext&, const Expr& x) { return abs(x); });
  add_unary_op(r, "Sqrt", [](const BuildContext&, const Expr& x) { return sqrt(x); });
  add_unary_op(r, "Exp", [](const BuildContext&, const Expr& x) { return exp_f32(x); });
  add_unary_op(r, "Log", [](const BuildContext&, const Expr& x) { return log_f32(x); });
  add_unary_op(r, "Erf", [](const BuildContext&, const Expr& x) { return erf_f32(x); });
  add_unary_op(r, "Tanh", [](const BuildContext&, const Expr& x) { return tanh_f32(x); });
  add_unary_op(r, "Sin", [](const BuildContext&, const Expr& x) { return sin_f32(x); });
  add_unary_op(r, "Cos", [](const BuildContext&, const Expr& x) { return cos_f32(x); });
  add_unary_op(r, "Reciprocal", [](const BuildContext&, const Expr& x) { return f32(1.0f) / x; });
  add_unary_op(r, "Sigmoid", [](const BuildContext&, const Expr& x) { return sigmoid_f32(x); });
  add_unary_op(r, "Relu", [](const BuildContext&, const Expr& x) { return max(x, cast(x.type(), 0)); });
  add_unary_op(r, "LeakyRelu", [](const BuildContext& b, const Expr& x) {
    float alpha = b.attrs().get_float("alpha", 0.01f);
    return select(x >= 0, x, x * alpha);
  });
  // HardSigmoid: clamp(alpha * x + beta, 0, 1); HardSwish: x * HardSigmoid(x) at alpha 1/6, beta 0.5.
  add_unary_op(r, "HardSigmoid", [](const BuildContext& b, const Expr& x) {
    const float alpha = b.attrs().get_float("alpha", 0.2f), beta = b.attrs().get_float("beta", 0.5f);
    return clamp(x * alpha + beta, 0.0f, 1.0f);
  });
  add_unary_op(r, "HardSwish",
               [](const BuildContext&, const Expr& x) { return x * clamp(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f); });
  add_unary_op(r, "Gelu", [](const BuildContext& b, const Expr& x) {
    std::string approx = b.attrs().get_string("approximate", "none");
    if (approx == "tanh") return gelu_tanh_f32(x);
    if (approx != "none") b.infer().fail("Gelu approximate='" + approx + "' is not 'none' or 'tanh'");
    return gelu_erf_f32(x);
  });
  add_unary_op(r, "Not", [](const BuildContext&, const Expr& x) { return from_bool(!as_bool(x)); });
  // Rounding (float32; Round: to nearest, ties to even, as ONNX says) and the sign.
  add_unary_op(r, "Floor", [](const BuildContext&, const Expr& x) { return floor(x); });
  add_unary_op(r, "Ceil", [](const BuildContext&, const Expr& x) { return ceil(x); });
  add_unary_op(r, "Round", [](const BuildContext&, const Expr& x) { return round(x); });
  add_unary_op(r, "Sign", [](const BuildContext&, const Expr& x) {
    const Type t = x.type();
    return select(x > cast(t, 0), cast(t, 1), select(x < cast(t, 0), cast(t, -1), cast(t, 0)));
  });
  // The exponential-linear family (alpha, gamma as ONNX defaults them) and the soft ones.
  add_unary_op(r, "Elu", [](const BuildContext& b, const Expr& x) {
    const float alpha = b.attrs().get_float("alpha", 1.0f);
    return select(x >= 0, x, alpha * (exp_f32(x) - 1.0f));
  });
  add_unary_op(r, "Selu", [](const BuildContext& b, const Expr& x) {
    const float alpha = b.attrs().get_float("alpha", 1.67326319217681884765625f);
    const float gamma = b.attrs().get_float("gamma", 1.05070102214813232421875f);
    return gamma * select(x > 0, x, alpha * exp_f32(x) - alpha);
  });
  add_unary_op(r, "Celu", [](const BuildContext& b, const Expr& x) {
    const float alpha = b.attrs().get_float("alpha", 1.0f);
    return max(x, 0.0f) + min(0.0f, alpha * (exp_f32(x / alpha) - 1.0f));
  });
  // log(1 + e^x); past x = 20 that is x to float32 precision (and e^x would overflow at 89).
  add_unary_op(r, "Softplus",
               [](const BuildContext&, const Expr& x) { return select(x > 20.0f, x, log_f32(1.0f + exp_f32(x))); });
  add_unary_op(r, "Softsign", [](const BuildContext&, const Expr& x) { return x / (1.0f + abs(x)); });
  add_unary_op(r, "ThresholdedRelu", [](const BuildContext& b, const Expr& x) {
    const float alpha = b.attrs().get_float("alpha", 1.0f);
    return select(x > alpha, x, cast(x.type(), 0));
  });
  add_unary_op(r, "Shrink", [](const BuildContext& b, const Expr& x) {
    const Type t = x.type();
    const float lambd = b.attrs().get_float("lambd", 0.5f), bias = b.attrs().get_float("bias", 0.0f);
    const Expr xf = cast<float>(x);
    return cast(t, select(xf < -lambd, xf + bias, select(xf > lambd, xf - bias, 0.0f)));
  });
  add_unary_op(
      r, "IsNaN", [](const BuildContext&, const Expr& x) { return from_bool(is_nan_f32(x)); },
      [](const InferContext&) { return DType::Bool; });
  add_unary_op(
      r, "IsInf",
      [](const BuildContext& b, const Expr& x) {
        const bool neg = b.attrs().get_int("detect_negative", 1) != 0, pos = b.attrs().get_int("detect_positive", 1) != 0;
        Expr side = Internal::const_false();
        if (neg) side = side || x < 0;
        if (pos) side = side || x > 0;
        return from_bool(is_inf_f32(x) && side);
      },
      [](const InferContext&) { return DType::Bool; });
  add_unary_op(
      r, "Cast", [](const BuildContext& b, const Expr& x) { return cast_expr(b.out_desc(0).dtype, x); }, cast_target);
  add_clip(r);
  add_dropout(r);
}

}  // namespace gaf
