// Window pooling: MaxPool and AveragePool over any number of spatial axes (kernel_shape, strides,
// pads or auto_pad, dilations, ceil_mode; fusion/ops/window.h), and GlobalAveragePool /
// GlobalMaxPool (reduce.cpp: a ReduceMean / ReduceMax over the spatial axes).
//   MaxPool:     Y[n, c, p...] = max over the window's positions inside X
//   AveragePool: the sum over those positions / their count, or with count_include_pad = 1 / the
//                count of the window's positions inside the padded input (padding reads 0)
// MaxPool takes any numeric X; its second output, Indices, is the position of the maximum in X
// flattened row-major (the first on a tie). Op class: Opaque (runs as its own kernel).
#include <limits>

#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"
#include "fusion/ops/window.h"

namespace gaf {

using namespace Halide;

namespace {

enum class PoolKind { Max, Average };

Window pool_window(const InferContext& c) {
  c.check(c.rank(0) >= 3, "X " + shape_str(c.shape(0)) + " must have rank >= 3 (N, C, spatial...)");
  c.check(c.attrs().has("kernel_shape"), "kernel_shape is required");
  c.check(c.attrs().get_int("storage_order", 0) == 0, "unsupported attribute storage_order=1");
  const Shape& x = c.shape(0);
  return window_of(c, Shape(x.begin() + 2, x.end()), c.attrs().get_ints("kernel_shape", {}),
                   c.attrs().get_int("ceil_mode", 0) != 0);
}

void add_pool(OpRegistry& r, const std::string& name, PoolKind kind) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Opaque;
  s.max_outputs = kind == PoolKind::Max ? 2 : 1;  // MaxPool's Indices
  s.infer = [kind](const InferContext& c) {
    if (kind == PoolKind::Average)
      c.check(c.dtype(0) == DType::Float32, "X must be float32");
    else
      c.check(c.dtype(0) != DType::Bool, "X must be numeric");
    const Window w = pool_window(c);
    Shape out{c.shape(0)[0], c.shape(0)[1]};
    out.insert(out.end(), w.out.begin(), w.out.end());
    std::vector<TensorDesc> outs{{c.dtype(0), out}};
    if (c.num_outputs() > 1) outs.push_back({DType::Int64, out});
    return outs;
  };
  s.build = [kind](BuildContext& b) {
    const Window w = pool_window(b.infer());
    const TensorFunc& X = b.in(0);
    std::vector<Var> v = b.vars(2 + w.spatial());  // n, c, p...
    Region extents;                                // innermost spatial axis first
    for (int d = w.spatial() - 1; d >= 0; --d) extents.emplace_back(0, static_cast<int>(w.kernel[d]));
    RDom red(extents, b.prefix() + "_r");
    std::vector<Expr> xi{v[0], v[1]};
    // Indices: the element's position in X flattened row-major.
    Expr flat = cast<int64_t>(v[0]) * X.dim(1) + v[1];
    Expr inside = Internal::const_true(), in_padded = Internal::const_true();
    for (int d = 0; d < w.spatial(); ++d) {
      Expr k = red[w.spatial() - 1 - d];
      Expr pos = v[2 + d] * static_cast<int>(w.strides[d]) + k * static_cast<int>(w.dilations[d]) -
                 static_cast<int>(w.pad_begin[d]);
      inside = inside && pos >= 0 && pos < X.dim(2 + d);
      in_padded = in_padded && pos < X.dim(2 + d) + static_cast<int>(w.pad_end[d]);
      xi.push_back(clamp(pos, 0, X.dim(2 + d) - 1));
      flat = flat * X.dim(2 + d) + xi.back();
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    const std::vector<Expr> at = halide_args(std::vector<Expr>(v.begin(), v.end()));
    Func acc = b.stage(kind == PoolKind::Max ? "max" : "sum", StageRole::Statistic, rvars);
    if (kind == PoolKind::Max) {
      const Type t = halide_type(b.in(0).dtype);
      Expr lowest = t.is_float() ? cast(t, -std::numeric_limits<float>::infinity()) : t.min();
      if (b.num_outputs() == 1) {
        acc(at) = lowest;
        acc(at) = select(inside, max(acc(at), X(xi)), acc(at));
        b.define_output(0, v, acc(at));
        return;
      }
      // With Indices: the first position of the largest value (index -1 until one is taken).
      acc(at) = Tuple(lowest, cast<int64_t>(-1));
      Expr take = inside && (acc(at)[1] < 0 || X(xi) > acc(at)[0]);
      acc(at) = Tuple(select(take, X(xi), acc(at)[0]), select(take, flat, acc(at)[1]));
      b.define_output(0, v, acc(at)[0]);
      b.define_output(1, v, acc(at)[1]);
      return;
    }
    acc(at) = 0.0f;
    acc(at) += select(inside, X(xi), 0.0f);
    // The divisor: the window's positions inside X, or inside the padded input.
    const bool include_pad = b.attrs().get_int("count_include_pad", 0) != 0;
    Func count = b.stage("count", StageRole::Statistic, rvars);
    count(at) = 0;
    count(at) += select(include_pad ? in_padded : inside, 1, 0);
    b.define_output(0, v, acc(at) / cast<float>(max(count(at), 1)));
  };
  r.add(std::move(s));
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  add_pool(r, "MaxPool", PoolKind::Max);
  add_pool(r, "AveragePool", PoolKind::Average);
}

}  // namespace gaf
