// Binary and n-ary broadcast ops: arithmetic, Pow, Max/Min/Sum/Mean (variadic), comparisons, logic
// (And, Or, Xor), Where.
#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"
#include "fusion/ops/math.h"

namespace gaf {

using namespace Halide;

namespace {

DType bool_out(const InferContext&) { return DType::Bool; }

// Float Add/Sub are kept strict: once a chain of them is inlined into one fused pipeline, Halide's
// simplifier would otherwise reassociate (x - m) - l into x - (m + l), which loses precision for
// large x (LogSoftmax's expanded form) and makes fused differ from unfused.
Expr strict_if_float(const Expr& e) { return e.type().is_float() ? strict_float(e) : e; }

// x[0] + x[1] + ..., in order (Sum, Mean).
Expr sum_in_order(const std::vector<Expr>& x) {
  Expr acc = x[0];
  for (size_t i = 1; i < x.size(); ++i) acc = strict_if_float(acc + x[i]);
  return acc;
}

Expr onnx_div(const Expr& a, const Expr& b) {
  // Integer Div truncates toward zero in ONNX (C semantics); Halide's '/' floors.
  if (a.type().is_int()) return div_round_to_zero(a, b);
  return a / b;
}

Expr onnx_pow(const Expr& a, const Expr& b) {
  // Output type is the base's. A float32 base takes the vector pow whatever the exponent's type
  // (integer exponents are exact in float32 up to 2^24); integer bases go through double like
  // numpy does.
  if (a.type() == Float(32)) return pow_f32(a, b);
  return cast(a.type(), pow(cast<double>(a), cast<double>(b)));
}

// PRelu(x, slope): x where x >= 0, else slope * x. The slope broadcasts to x (numpy,
// right-aligned: per channel is [C, 1, 1]), or, a 1-D slope of x's channel count that does not,
// along axis 1 (the per-channel form before opset 7, which converted PyTorch models carry).
bool channel_slope(const InferContext& c) {
  return c.rank(1) == 1 && c.rank(0) >= 2 && c.shape(1)[0] != 1 && c.shape(1)[0] == c.shape(0)[1] &&
         c.shape(1)[0] != c.shape(0).back();
}

void add_prelu(OpRegistry& r) {
  OpSchema s;
  s.name = "PRelu";
  s.op_class = OpClass::Broadcast;
  s.min_inputs = s.max_inputs = 2;
  s.infer = [](const InferContext& c) {
    c.check(c.dtype(1) == c.dtype(0),
            "slope has dtype " + std::string(dtype_name(c.dtype(1))) + ", X has " + dtype_name(c.dtype(0)));
    if (!channel_slope(c))
      c.check(broadcast_shapes(c, {c.shape(0), c.shape(1)}) == c.shape(0),
              "slope " + shape_str(c.shape(1)) + " does not broadcast to X " + shape_str(c.shape(0)));
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    std::vector<Var> v = b.vars(b.in(0).rank());
    Expr x = b.in(0)(v);
    Expr slope = channel_slope(b.infer()) ? b.in(1)({Expr(v[1])}) : b.broadcast_read(1, v);
    b.define_output(0, v, select(x < 0, x * slope, x));
  };
  r.add(std::move(s));
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  add_broadcast_op(r, "Add", 2, 2,
                   [](const BuildContext&, const std::vector<Expr>& x) { return strict_if_float(x[0] + x[1]); });
  add_broadcast_op(r, "Sub", 2, 2,
                   [](const BuildContext&, const std::vector<Expr>& x) { return strict_if_float(x[0] - x[1]); });
  add_broadcast_op(r, "Mul", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return x[0] * x[1]; });
  add_broadcast_op(r, "Div", 2, 2,
                   [](const BuildContext&, const std::vector<Expr>& x) { return onnx_div(x[0], x[1]); });
  add_broadcast_op(
      r, "Pow", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return onnx_pow(x[0], x[1]); }, nullptr,
      /*same_dtype_inputs=*/false);
  auto fold = [](bool is_max) {
    return [is_max](const BuildContext&, const std::vector<Expr>& x) {
      Expr acc = x[0];
      for (size_t i = 1; i < x.size(); ++i) acc = is_max ? max(acc, x[i]) : min(acc, x[i]);
      return acc;
    };
  };
  add_broadcast_op(r, "Max", 1, 1 << 20, fold(true));
  add_broadcast_op(r, "Min", 1, 1 << 20, fold(false));
  add_prelu(r);
  add_broadcast_op(
      r, "Equal", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(x[0] == x[1]); },
      bool_out);
  add_broadcast_op(
      r, "Less", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(x[0] < x[1]); },
      bool_out);
  add_broadcast_op(
      r, "Greater", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(x[0] > x[1]); },
      bool_out);
  add_broadcast_op(
      r, "GreaterOrEqual", 2, 2,
      [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(x[0] >= x[1]); }, bool_out);
  add_broadcast_op(
      r, "LessOrEqual", 2, 2, [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(x[0] <= x[1]); },
      bool_out);
  // Logic on bool tensors (uint8 0/1).
  add_broadcast_op(
      r, "And", 2, 2,
      [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(as_bool(x[0]) && as_bool(x[1])); },
      bool_out);
  add_broadcast_op(
      r, "Or", 2, 2,
      [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(as_bool(x[0]) || as_bool(x[1])); },
      bool_out);
  add_broadcast_op(
      r, "Xor", 2, 2,
      [](const BuildContext&, const std::vector<Expr>& x) { return from_bool(as_bool(x[0]) != as_bool(x[1])); },
      bool_out);
  // Sum and Mean of any number of inputs, broadcast.
  add_broadcast_op(r, "Sum", 1, 1 << 20,
                   [](const BuildContext&, const std::vector<Expr>& x) { return sum_in_order(x); });
  add_broadcast_op(r, "Mean", 1, 1 << 20, [](const BuildContext&, const std::vector<Expr>& x) {
    Expr sum = sum_in_order(x);
    return sum / cast(sum.type(), static_cast<int>(x.size()));
  });

  // Where(cond, x, y): cond is bool, x and y share a dtype; the output takes x's.
  OpSchema w;
  w.name = "Where";
  w.op_class = OpClass::Broadcast;
  w.min_inputs = w.max_inputs = 3;
  w.infer = [](const InferContext& c) {
    c.check(c.dtype(0) == DType::Bool, "condition must be bool");
    c.check(c.dtype(1) == c.dtype(2), "X and Y must have the same dtype");
    return std::vector<TensorDesc>{{c.dtype(1), broadcast_shapes(c, {c.shape(0), c.shape(1), c.shape(2)})}};
  };
  w.build = [](BuildContext& b) {
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    b.define_output(0, v, select(as_bool(b.broadcast_read(0, v)), b.broadcast_read(1, v), b.broadcast_read(2, v)));
  };
  r.add(std::move(w));
}

}  // namespace gaf
