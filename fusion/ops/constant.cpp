// Constant producers: Constant, ConstantOfShape, Shape, Size, Range.
//
// Op class: Injective. Constant folding normally removes these before planning, but a Constant or
// ConstantOfShape above the fold size limit survives; as Injective it fuses into its consumers
// (each element is computed where it is read) instead of being materialised by its own kernel.
#include <algorithm>
#include <cmath>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

using namespace Halide;

namespace {

// Constant's value from whichever attribute carries it.
Tensor constant_value(const InferContext& c) {
  const Attributes& a = c.attrs();
  if (const Tensor* t = a.get_tensor("value")) return *t;
  if (a.has("value_float"))
    return Tensor::from_values(DType::Float32, {}, std::vector<float>{a.get_float("value_float", 0)});
  if (a.has("value_int")) return Tensor::from_values(DType::Int64, {}, std::vector<int64_t>{a.get_int("value_int", 0)});
  if (a.has("value_floats")) {
    std::vector<float> v = a.get_floats("value_floats", {});
    return Tensor::from_values(DType::Float32, {static_cast<int64_t>(v.size())}, v);
  }
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.get_ints("value_ints", {});
    return Tensor::from_values(DType::Int64, {static_cast<int64_t>(v.size())}, v);
  }
  c.fail(
      "needs a 'value', 'value_float(s)' or 'value_int(s)' attribute (sparse and string values are "
      "not supported)");
}

// Shape's output: the input's dims in [start, end) (opset 15; negative counts from the end,
// both clamped into [0, rank]).
Tensor shape_value(const InferContext& c) {
  const Shape& s = c.shape(0);
  int64_t rank = c.rank(0);
  auto resolve = [rank](int64_t p) { return std::clamp(p < 0 ? p + rank : p, int64_t{0}, rank); };
  int64_t start = resolve(c.attrs().get_int("start", 0));
  int64_t end = resolve(c.attrs().get_int("end", rank));
  std::vector<int64_t> dims(s.begin() + start, s.begin() + std::max(start, end));
  return Tensor::from_values(DType::Int64, {static_cast<int64_t>(dims.size())}, dims);
}

// Size's output: the input's element count as an int64 scalar.
Tensor size_value(const InferContext& c) {
  return Tensor::from_values(DType::Int64, {}, std::vector<int64_t>{shape_numel(c.shape(0))});
}

// Shape's output element v[0] (or Size's scalar) for an input with symbolic extents, as int64.
Expr symbolic_shape_value(const BuildContext& b, const std::vector<Var>& v) {
  const TensorFunc& in = b.in(0);
  if (b.node().op_type == "Size") return cast<int64_t>(product(in.dims()));
  int64_t rank = in.rank();
  auto resolve = [rank](int64_t p) { return std::clamp(p < 0 ? p + rank : p, int64_t{0}, rank); };
  int64_t start = resolve(b.attrs().get_int("start", 0));
  int64_t end = std::max(start, resolve(b.attrs().get_int("end", rank)));
  Expr e = cast<int64_t>(in.dim(static_cast<int>(end - 1)));
  for (int64_t d = end - 2; d >= start; --d)
    e = select(v[0] == static_cast<int>(d - start), cast<int64_t>(in.dim(static_cast<int>(d))), e);
  return e;
}

// Registers an op whose output is a tensor known at compile time, embedded in the pipeline.
void add_embedded_constant(OpRegistry& r, const std::string& name, int num_inputs, std::vector<int> shape_only,
                           Tensor (*value)(const InferContext&)) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Injective;
  s.min_inputs = s.max_inputs = num_inputs;
  s.shape_only_inputs = std::move(shape_only);
  s.infer = [value](const InferContext& c) {
    Tensor t = value(c);
    return std::vector<TensorDesc>{{t.dtype(), t.shape()}};
  };
  s.build = [value](BuildContext& b) {
    Tensor t = value(b.infer());
    if (t.numel() == 0) {  // empty output, never run
      b.define_output(0, b.vars(t.rank()), cast(halide_type(t.dtype()), 0));
      return;
    }
    // Shape and Size of a tensor with symbolic extents: the values are runtime Exprs.
    if (b.num_inputs() > 0 && !b.in(0).is_static()) {
      std::vector<Var> v = b.vars(t.rank());
      b.define_output(0, v, symbolic_shape_value(b, v));
      return;
    }
    b.set_output(0, b.constant(t, "value").func);
  };
  r.add(std::move(s));
}

// ConstantOfShape's fill value: a one-element 'value' tensor, default float32 0.
Tensor fill_value(const InferContext& c) {
  const Tensor* t = c.attrs().get_tensor("value");
  if (!t) return Tensor::from_values(DType::Float32, {}, std::vector<float>{0});
  c.check(t->numel() == 1, "'value' must hold one element, got shape " + shape_str(t->shape()));
  return *t;
}

void add_constant_of_shape(OpRegistry& r) {
  OpSchema s;
  s.name = "ConstantOfShape";
  s.op_class = OpClass::Injective;
  s.value_inputs = {0};
  s.infer = [](const InferContext& c) {
    Shape out = c.value(0).to_int_vector();
    for (int64_t d : out) c.check(d >= 0, "negative dim in shape " + shape_str(out));
    return std::vector<TensorDesc>{{fill_value(c).dtype(), out}};
  };
  s.build = [](BuildContext& b) {
    Tensor t = fill_value(b.infer());
    Type ty = halide_type(t.dtype());
    Expr e = ty.is_float() ? Internal::make_const(ty, t.as_double(0)) : Internal::make_const(ty, t.as_int(0));
    b.define_output(0, b.vars(static_cast<int>(b.out_desc(0).shape.size())), e);
  };
  r.add(std::move(s));
}

// Range(start, limit, delta): start + i * delta for i < max(ceil((limit - start) / delta), 0).
// All three are scalar value inputs (torch.arange exports it; folding makes it a constant).
void add_range(OpRegistry& r) {
  OpSchema s;
  s.name = "Range";
  s.op_class = OpClass::Injective;
  s.min_inputs = s.max_inputs = 3;
  s.value_inputs = {0, 1, 2};
  s.infer = [](const InferContext& c) {
    for (int i = 0; i < 3; ++i) {
      c.check(c.dtype(i) == c.dtype(0), "start, limit and delta must share a dtype");
      c.check(c.value(i).numel() == 1, "start, limit and delta must be scalars");
    }
    double start = c.value(0).as_double(0), limit = c.value(1).as_double(0), delta = c.value(2).as_double(0);
    c.check(delta != 0, "delta must not be 0");
    int64_t n = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
    return std::vector<TensorDesc>{{c.dtype(0), {n}}};
  };
  s.build = [](BuildContext& b) {
    Type ty = halide_type(b.out_desc(0).dtype);
    std::vector<Var> v = b.vars(1);
    // start and delta may be symbolic (value_expr); the limit only sets the output's extent.
    Expr start = cast(ty, b.value_expr(0, 0)), delta = cast(ty, b.value_expr(2, 0));
    b.define_output(0, v, start + cast(ty, v[0]) * delta);
  };
  r.add(std::move(s));
}

}  // namespace

void register_constant_ops(OpRegistry& r) {
  add_range(r);
  add_embedded_constant(r, "Constant", 0, {}, constant_value);
  add_embedded_constant(r, "Shape", 1, {0}, shape_value);
  add_embedded_constant(r, "Size", 1, {0}, size_value);
  add_constant_of_shape(r);
}

}  // namespace gaf
