// ONNX's linear quantization ops, int8/uint8: QuantizeLinear, DequantizeLinear (per tensor, and
// per axis from opset 13), DynamicQuantizeLinear, MatMulInteger, QLinearMatMul. Quantized values
// are computed in float32 and rounded to nearest even, then saturated to the integer type; integer
// products accumulate exactly in int32.
#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"
#include "fusion/ops/low_precision.h"
#include "fusion/ops/reduce_util.h"

namespace gaf {

using namespace Halide;

namespace {

bool is_quantized(DType t) { return t == DType::Int8 || t == DType::UInt8; }

bool is_scalar_param(const InferContext& c, int i) {
  return !c.has_input(i) || (shape_numel(c.shape(i)) == 1 && c.rank(i) <= 1);
}

// Scale / zero point of a per-tensor (one element) or per-axis (1-D along `axis` of input 0)
// quantization; `axis` is -1 when only per-tensor is allowed (opset < 13).
void check_quant_param(const InferContext& c, int i, int axis, const char* what) {
  if (is_scalar_param(c, i)) return;
  c.check(axis >= 0, std::string(what) + " must be a scalar before opset 13, got " + shape_str(c.shape(i)));
  c.check(c.rank(i) == 1 && c.shape(i)[0] == c.shape(0)[axis],
          std::string(what) + " must be a scalar or 1-D of input 0's axis " + std::to_string(axis) + " (" +
              std::to_string(c.shape(0)[axis]) + " elements), got " + shape_str(c.shape(i)));
}

// The quantization axis, -1 for per-tensor parameters (then `axis` is not read: its default 1
// would be out of range for a 1-D input) and before opset 13 (per-tensor only).
int quant_axis(const InferContext& c) {
  c.check(!c.attrs().has("block_size") || c.attrs().get_int("block_size", 0) == 0,
          "unsupported attribute block_size (blocked quantization)");
  if (c.attrs().get_int("_opset", 13) < 13 || (is_scalar_param(c, 1) && is_scalar_param(c, 2))) return -1;
  return c.axis(c.attrs().get_int("axis", 1), c.rank(0));
}

// Input i (scale or zero point) at output index v: element 0, or element v[axis].
Expr param_at(const BuildContext& b, int i, const std::vector<Var>& v, int axis) {
  const TensorFunc& p = b.in(i);
  if (p.rank() == 1 && p.shape[0] != 1 && axis >= 0) return p({Expr(v[axis])});
  return p(std::vector<Expr>(p.rank(), Expr(0)));
}

// saturate(round_half_even(x) + zero_point) in `t` (x, zero point float32).
Expr quantize(const Expr& x, const Expr& zero_point, Type t) { return saturating_cast(t, round(x) + zero_point); }

void add_quantize_linear(OpRegistry& r) {
  OpSchema s;
  s.name = "QuantizeLinear";
  s.split_rule = OpSchema::SplitRule::Stop;
  s.op_class = OpClass::Broadcast;  // scale and zero point are read at every element
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) {
    c.check(is_float_dtype(c.dtype(0)), std::string("input is ") + dtype_name(c.dtype(0)) + ", not a float type");
    DType out = c.has_input(2) ? c.dtype(2) : DType::UInt8;
    c.check(is_quantized(out), std::string("quantizing to ") + dtype_name(out) + " is not supported (int8, uint8 are)");
    const int axis = quant_axis(c);
    check_quant_param(c, 1, axis, "y_scale");
    check_quant_param(c, 2, axis, "y_zero_point");
    return std::vector<TensorDesc>{{out, c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    const int axis = quant_axis(b.infer());
    std::vector<Var> v = b.vars(b.in(0).rank());
    Expr zp = b.has_input(2) ? to_f32(param_at(b, 2, v, axis)) : Expr(0.0f);
    Expr y = to_f32(b.in(0)(v)) / to_f32(param_at(b, 1, v, axis));
    b.define_output(0, v, quantize(y, zp, halide_type(b.out_desc(0).dtype)));
  };
  r.add(std::move(s));
}

void add_dequantize_linear(OpRegistry& r) {
  OpSchema s;
  s.name = "DequantizeLinear";
  s.split_rule = OpSchema::SplitRule::Stop;
  s.op_class = OpClass::Broadcast;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) {
    DType in = c.dtype(0);
    c.check(is_quantized(in) || in == DType::Int32,
            std::string("input is ") + dtype_name(in) + " (int8, uint8, int32 are supported)");
    c.check(is_float_dtype(c.dtype(1)), "x_scale must be a float type");
    if (c.has_input(2)) c.check(c.dtype(2) == in, "x_zero_point's dtype differs from x's");
    const int axis = quant_axis(c);
    check_quant_param(c, 1, axis, "x_scale");
    check_quant_param(c, 2, axis, "x_zero_point");
    return std::vector<TensorDesc>{{c.dtype(1), c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    const int axis = quant_axis(b.infer());
    std::vector<Var> v = b.vars(b.in(0).rank());
    // The difference in int32 first: exact, where float32 would round a large int32 x.
    Expr x = cast<int32_t>(b.in(0)(v));
    if (b.has_input(2)) x = x - cast<int32_t>(param_at(b, 2, v, axis));
    b.define_output(0, v, cast<float>(x) * to_f32(param_at(b, 1, v, axis)));
  };
  r.add(std::move(s));
}

// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = saturate(round(-min / scale)),
// y = saturate(round(x / scale) + zero point), all uint8. An all-zero x (scale 0) gives zeros.
void add_dynamic_quantize_linear(OpRegistry& r) {
  OpSchema s;
  s.name = "DynamicQuantizeLinear";
  s.split_rule = OpSchema::SplitRule::Stop;
  s.op_class = OpClass::Opaque;  // a whole-tensor statistic read by every element
  s.min_inputs = s.max_inputs = 1;
  s.min_outputs = s.max_outputs = 3;
  s.infer = [](const InferContext& c) {
    c.check(c.dtype(0) == DType::Float32, std::string("input is ") + dtype_name(c.dtype(0)) + ", not float32");
    c.check(shape_numel(c.shape(0)) > 0, "an empty input has no range");
    return std::vector<TensorDesc>{{DType::UInt8, c.shape(0)}, {DType::Float32, {}}, {DType::UInt8, {}}};
  };
  s.build = [](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    const std::vector<bool> all(x.rank(), true);
    auto value = [&](const std::vector<Expr>& idx) { return x(idx); };
    auto negated = [&](const std::vector<Expr>& idx) { return -x(idx); };
    const std::vector<Expr> origin(x.rank(), Expr(0));
    Expr hi = max(reduce_stage(b, "max", x.dims(), all, ReduceKind::Max, value).at(origin), 0.0f);
    Expr lo = min(-reduce_stage(b, "negmin", x.dims(), all, ReduceKind::Max, negated).at(origin), 0.0f);
    Expr scale = (hi - lo) / 255.0f;
    Expr safe = select(scale == 0.0f, 1.0f, scale);
    Expr zp = cast<float>(quantize(-lo / safe, 0.0f, UInt(8)));
    std::vector<Var> v = b.vars(x.rank());
    b.define_output(0, v, quantize(x(v) / safe, zp, UInt(8)));
    b.define_output(1, {}, scale);
    b.define_output(2, {}, zp);
  };
  r.add(std::move(s));
}

// The integer matrix product of MatMulInteger and QLinearMatMul: A [..., M, K], B [..., K, N]
// (rank >= 2, batch dims broadcast), zero points per tensor or per row of A / column of B.
struct IntMatMul {
  int a, b, a_zp, b_zp;  // input indices (zero points may be absent)
};

Shape int_matmul_shape(const InferContext& c, const IntMatMul& m) {
  for (int i : {m.a, m.b}) {
    c.check(is_quantized(c.dtype(i)),
            "input " + std::to_string(i) + " is " + dtype_name(c.dtype(i)) + " (int8, uint8 are supported)");
    c.check(c.rank(i) >= 2,
            "input " + std::to_string(i) + " has rank 1 (1-D operands are not supported; reshape to 2-D)");
  }
  const Shape &a = c.shape(m.a), &b = c.shape(m.b);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  c.check(b[b.size() - 2] == K, "inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  auto check_zp = [&](int i, int of, int64_t n, const char* per) {
    if (!c.has_input(i)) return;
    c.check(c.dtype(i) == c.dtype(of),
            "input " + std::to_string(i) + "'s dtype differs from input " + std::to_string(of) + "'s");
    c.check(shape_numel(c.shape(i)) == 1 && c.rank(i) <= 1 || c.rank(i) == 1 && c.shape(i)[0] == n,
            "input " + std::to_string(i) + " must be a scalar or 1-D per " + per + ", got " + shape_str(c.shape(i)));
  };
  check_zp(m.a_zp, m.a, M, "row of A");
  check_zp(m.b_zp, m.b, N, "column of B");
  Shape out = broadcast_shapes(c, {Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
  out.push_back(M);
  out.push_back(N);
  return out;
}

// sum_k (A - a_zp)(B - b_zp) in int32 at output index v (ONNX order), as an Accumulator stage.
Expr int_matmul(BuildContext& b, const IntMatMul& m, const std::vector<Var>& v) {
  const TensorFunc &A = b.in(m.a), &B = b.in(m.b);
  const int R = static_cast<int>(v.size());
  RDom k(0, A.dim(A.rank() - 1), b.prefix() + "_k");
  // An operand's index: its batch dims right-aligned to the output's (size 1 read at 0).
  auto index = [&](const TensorFunc& t, const Expr& row, const Expr& col) {
    std::vector<Expr> idx;
    for (int d = 0; d < t.rank() - 2; ++d)
      idx.push_back(t.shape[d] == 1 ? Expr(0) : Expr(v[R - 2 - (t.rank() - 2) + d]));
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  };
  auto zero_point = [&](int i, const Var& at) -> Expr {
    if (!b.has_input(i)) return Expr(0);
    const TensorFunc& z = b.in(i);
    if (z.rank() == 1 && z.shape[0] != 1) return cast<int32_t>(z({Expr(at)}));
    return cast<int32_t>(z(std::vector<Expr>(z.rank(), Expr(0))));
  };
  // The zero points are applied after the sums: sum (a - za)(b - zb) = sum ab - zb sum a - za sum b
  // + K za zb. Halide 14's x86 dot-product matching computed the direct form wrongly (a + za).
  Expr a = cast<int32_t>(A(index(A, v[R - 2], k.x))), bb = cast<int32_t>(B(index(B, k.x, v[R - 1])));
  Expr za = zero_point(m.a_zp, v[R - 2]), zb = zero_point(m.b_zp, v[R - 1]);
  Func acc = b.stage("acc", StageRole::Accumulator, {k.x});
  const std::vector<Var> args = halide_args(v);
  acc(args) = Tuple(0, 0, 0);
  acc(args) = Tuple(acc(args)[0] + a * bb, acc(args)[1] + a, acc(args)[2] + bb);
  return acc(args)[0] - zb * acc(args)[1] - za * acc(args)[2] + cast<int32_t>(A.dim(A.rank() - 1)) * za * zb;
}

void add_matmul_integer(OpRegistry& r) {
  static const IntMatMul m{0, 1, 2, 3};
  OpSchema s;
  s.name = "MatMulInteger";
  s.op_class = OpClass::Opaque;  // not the float MatMul the planner's rules and schedules know
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{DType::Int32, int_matmul_shape(c, m)}}; };
  s.build = [](BuildContext& b) {
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    b.define_output(0, v, int_matmul(b, m, v));
  };
  r.add(std::move(s));
}

// y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point), the scales per tensor.
void add_qlinear_matmul(OpRegistry& r) {
  static const IntMatMul m{0, 3, 2, 5};
  OpSchema s;
  s.name = "QLinearMatMul";
  s.op_class = OpClass::Opaque;
  s.min_inputs = s.max_inputs = 8;
  s.infer = [](const InferContext& c) {
    for (int i : {1, 4, 6})
      c.check(c.dtype(i) == DType::Float32 && shape_numel(c.shape(i)) == 1 && c.rank(i) <= 1,
              "input " + std::to_string(i) + " (a scale) must be one float32 (per-axis scales are not supported)");
    c.check(shape_numel(c.shape(7)) == 1 && c.rank(7) <= 1, "y_zero_point must be a scalar");
    c.check(is_quantized(c.dtype(7)), "y_zero_point must be int8 or uint8");
    return std::vector<TensorDesc>{{c.dtype(7), int_matmul_shape(c, m)}};
  };
  s.build = [](BuildContext& b) {
    auto scalar = [&](int i) { return b.in(i)(std::vector<Expr>(b.in(i).rank(), Expr(0))); };
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    Expr multiplier = scalar(1) * scalar(4) / scalar(6);
    Expr y = cast<float>(int_matmul(b, m, v)) * multiplier;
    b.define_output(0, v, quantize(y, cast<float>(scalar(7)), halide_type(b.out_desc(0).dtype)));
  };
  r.add(std::move(s));
}

}  // namespace

void register_quantize_ops(OpRegistry& r) {
  add_quantize_linear(r);
  add_dequantize_linear(r);
  add_dynamic_quantize_linear(r);
  add_matmul_integer(r);
  add_qlinear_matmul(r);
}

}  // namespace gaf
