// Pad: constant, reflect and edge modes over any axes. pads (an int64 value input, or the
// attribute before opset 11) lists the begin counts then the end counts of every padded axis
// (negative counts crop); constant_value (a value input, default 0) fills the constant mode;
// axes (opset 18) names the padded axes, default all. Output position o of an axis reads input
// position i = o - pad_begin: constant selects the value outside 0..in-1, edge clamps, reflect
// mirrors about the first and last element (each pad smaller than the axis, as numpy's 'reflect').
// Op class: Injective (each output element reads at most one input element).
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"
#include "fusion/ops/window.h"

namespace gaf {

using namespace Halide;

namespace {

struct PadSpec {
  std::vector<int64_t> begin, end;  // per axis of the input
  std::string mode;
};

PadSpec pad_spec(const InferContext& c) {
  const int rank = c.rank(0);
  PadSpec p;
  p.mode = c.attrs().get_string("mode", "constant");
  c.check(p.mode == "constant" || p.mode == "reflect" || p.mode == "edge",
          "unsupported attribute mode=" + p.mode + " (constant, reflect or edge)");
  const std::vector<int64_t> pads = c.has_input(1) ? c.value(1).to_int_vector() : c.attrs().get_ints("pads", {});
  std::vector<int> axes;
  if (c.has_input(3)) {
    for (int64_t a : c.value(3).to_int_vector()) axes.push_back(c.axis(a, rank));
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t n = axes.size();
  c.check(pads.size() == 2 * n, "pads " + ints_str(pads) + " must have " + std::to_string(2 * n) + " values");
  p.begin.assign(rank, 0);
  p.end.assign(rank, 0);
  for (size_t k = 0; k < n; ++k) {
    p.begin[axes[k]] = pads[k];
    p.end[axes[k]] = pads[n + k];
  }
  for (int d = 0; d < rank; ++d) {
    const int64_t in = c.shape(0)[d];
    c.check(in + p.begin[d] + p.end[d] >= 0,
            "pads " + ints_str(pads) + " crop more than axis " + std::to_string(d) + " holds");
    if (p.mode == "reflect")
      c.check(p.begin[d] < in && p.end[d] < in, "mode=reflect pads " + ints_str(pads) + " must be smaller than axis " +
                                                    std::to_string(d) + " (" + std::to_string(in) + ")");
    if (p.mode == "edge" && (p.begin[d] > 0 || p.end[d] > 0))
      c.check(in > 0, "mode=edge pads an empty axis " + std::to_string(d));
  }
  return p;
}

}  // namespace

void register_pad_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Pad";
  s.op_class = OpClass::Injective;
  s.max_inputs = 4;
  s.value_inputs = {1, 2, 3};
  s.infer = [](const InferContext& c) {
    const PadSpec p = pad_spec(c);
    Shape out = c.shape(0);
    for (size_t d = 0; d < out.size(); ++d) out[d] += p.begin[d] + p.end[d];
    return std::vector<TensorDesc>{{c.dtype(0), out}};
  };
  s.build = [](BuildContext& b) {
    const InferContext& c = b.infer();
    const PadSpec p = pad_spec(c);
    const TensorFunc& X = b.in(0);
    std::vector<Var> v = b.vars(X.rank());
    std::vector<Expr> idx;
    Expr inside = Internal::const_true();
    for (int d = 0; d < X.rank(); ++d) {
      Expr i = v[d] - static_cast<int>(p.begin[d]), last = X.dim(d) - 1;
      if (p.mode == "reflect") i = select(i < 0, -i, select(i > last, 2 * last - i, i));
      if (p.mode == "constant" && (p.begin[d] > 0 || p.end[d] > 0)) inside = inside && i >= 0 && i <= last;
      idx.push_back(clamp(i, 0, max(last, 0)));
    }
    Expr x = X(idx);
    if (p.mode == "constant") {
      Expr fill =
          c.has_input(2) && c.value(2).numel() > 0 ? b.value_expr(2, 0) : Expr(b.attrs().get_float("value", 0.0f));
      x = select(inside, x, cast(x.type(), fill));
    }
    b.define_output(0, v, x);
  };
  r.add(std::move(s));
}

}  // namespace gaf
