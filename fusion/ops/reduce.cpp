// Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp; and the row-statistic helpers (reduce_util.h)
// that the normalisation family shares.
#include <limits>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"
#include "fusion/ops/math.h"
#include "fusion/ops/reduce_util.h"

namespace gaf {

using namespace Halide;

Expr RowStat::at(const std::vector<Expr>& idx) const {
  std::vector<Expr> kept;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!reduced.at(d)) kept.push_back(idx[d]);
  return func(halide_args(kept));
}
Expr RowStat::at(const std::vector<Var>& idx) const { return at(std::vector<Expr>(idx.begin(), idx.end())); }

Expr reduced_count(const std::vector<Expr>& extents, const std::vector<bool>& reduced) {
  std::vector<Expr> r;
  for (size_t d = 0; d < extents.size(); ++d)
    if (reduced[d]) r.push_back(extents[d]);
  return product(r);
}

Expr inv_count(const Expr& n) {
  if (std::optional<int64_t> c = const_value(n)) return 1.0f / static_cast<float>(std::max<int64_t>(*c, 1));
  return 1.0f / cast<float>(max(n, 1));
}

RowStat reduce_stage(BuildContext& b, const std::string& suffix, const std::vector<Expr>& extents,
                     const std::vector<bool>& reduced, ReduceKind kind, const IndexExpr& value) {
  int rank = static_cast<int>(extents.size());
  std::vector<Var> v = b.vars(rank);
  std::vector<Var> kept;
  std::vector<Region::value_type> region;  // RDom dims, innermost ONNX axis first
  for (int d = rank - 1; d >= 0; --d)
    if (reduced[d]) region.emplace_back(0, extents[d]);
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) kept.push_back(v[d]);
  RDom r(region, b.prefix() + "_" + suffix + "_r");
  std::vector<Expr> idx;
  int ri = static_cast<int>(region.size());
  for (int d = 0; d < rank; ++d) idx.push_back(reduced[d] ? Expr(r[--ri]) : Expr(v[d]));
  Expr x = value(idx);
  Type t = x.type();

  std::vector<RVar> rvars;
  for (int i = 0; i < r.dimensions(); ++i) rvars.push_back(r[i]);
  Func f = b.stage(suffix, StageRole::Statistic, rvars);
  std::vector<Var> args = halide_args(kept);
  // Max from -inf (Min from +inf) so that a row of -inf (or an empty row) reduces like numpy's.
  const float inf = std::numeric_limits<float>::infinity();
  switch (kind) {
    case ReduceKind::Sum:
      f(args) = cast(t, 0);
      f(args) = f(args) + x;
      break;
    case ReduceKind::Prod:
      f(args) = cast(t, 1);
      f(args) = f(args) * x;
      break;
    case ReduceKind::Max:
      f(args) = t.is_float() ? cast(t, -inf) : t.min();
      f(args) = max(f(args), x);
      break;
    case ReduceKind::Min:
      f(args) = t.is_float() ? cast(t, inf) : t.max();
      f(args) = min(f(args), x);
      break;
  }
  return RowStat{f, args, reduced};
}

RowStat map_stat(BuildContext& b, const std::string& suffix, const RowStat& s,
                 const std::function<Expr(const Expr&)>& f) {
  Func g = b.stage(suffix, StageRole::Pointwise);
  g(s.args) = f(s.func(s.args));
  return RowStat{g, s.args, s.reduced};
}

MeanVar mean_var(BuildContext& b, const std::vector<Expr>& extents, const std::vector<bool>& reduced,
                 const IndexExpr& x) {
  Expr inv_n = inv_count(reduced_count(extents, reduced));
  auto xf = [&](const std::vector<Expr>& idx) { return cast<float>(x(idx)); };
  RowStat sum = reduce_stage(b, "sum", extents, reduced, ReduceKind::Sum, xf);
  RowStat mean = map_stat(b, "mean", sum, [&](const Expr& s) { return s * inv_n; });
  RowStat sq = reduce_stage(b, "sqdev", extents, reduced, ReduceKind::Sum, [&](const std::vector<Expr>& idx) {
    Expr d = xf(idx) - mean.at(idx);
    return d * d;
  });
  RowStat var = map_stat(b, "var", sq, [&](const Expr& s) { return s * inv_n; });
  return MeanVar{mean, var};
}

namespace {

enum class ReduceOp { Mean, Sum, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

// The float-only ones (a square root or a logarithm of the result).
bool float_only(ReduceOp op) { return op == ReduceOp::L2 || op == ReduceOp::LogSum || op == ReduceOp::LogSumExp; }

// Which axes a Reduce* node reduces, or an empty vector for "none" (noop_with_empty_axes=1 with
// no axes: the output is the input). Axes come from value input 1 (ReduceSum opset 13+, the
// others opset 18+) or else the 'axes' attribute; none given means all axes.
// `spatial`: GlobalAveragePool / GlobalMaxPool, every axis after N and C (keepdims).
std::vector<bool> reduce_axes(const InferContext& c, bool spatial) {
  int rank = c.rank(0);
  if (spatial) {
    c.check(rank >= 3, "X " + shape_str(c.shape(0)) + " must have rank >= 3 (N, C, spatial...)");
    std::vector<bool> reduced(rank, true);
    reduced[0] = reduced[1] = false;
    return reduced;
  }
  std::vector<int64_t> axes = c.has_input(1) ? c.value(1).to_int_vector() : c.attrs().get_ints("axes", {});
  if (axes.empty()) {
    if (c.attrs().get_int("noop_with_empty_axes", 0) != 0) return {};
    return std::vector<bool>(rank, true);
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    int ax = c.axis(a, rank);
    c.check(!reduced[ax], "axis " + std::to_string(a) + " is repeated");
    reduced[ax] = true;
  }
  return reduced;
}

Shape reduce_shape(const InferContext& c, const std::vector<bool>& reduced) {
  if (reduced.empty()) return c.shape(0);
  bool keep = c.attrs().get_int("keepdims", 1) != 0;
  Shape out;
  for (int d = 0; d < c.rank(0); ++d) {
    if (!reduced[d])
      out.push_back(c.shape(0)[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

void add_reduce(OpRegistry& r, const std::string& name, ReduceOp op, bool spatial = false) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Reduction;
  s.max_inputs = spatial ? 1 : 2;
  if (!spatial) s.split_rule = OpSchema::SplitRule::Reduce;
  if (!spatial) s.value_inputs = {1};
  s.infer = [op, spatial](const InferContext& c) {
    c.check(c.dtype(0) != DType::Bool, "bool input is not supported");
    if (float_only(op)) c.check(c.dtype(0) == DType::Float32, "X must be float32");
    std::vector<bool> reduced = reduce_axes(c, spatial);
    if ((op == ReduceOp::Max || op == ReduceOp::Min) && !reduced.empty())
      for (int d = 0; d < c.rank(0); ++d)
        c.check(!reduced[d] || c.shape(0)[d] > 0, c.node().op_type + " over an empty axis has no value");
    return std::vector<TensorDesc>{{c.dtype(0), reduce_shape(c, reduced)}};
  };
  s.build = [op, spatial](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    std::vector<bool> reduced = reduce_axes(b.infer(), spatial);
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    if (reduced.empty()) {  // noop_with_empty_axes
      b.define_output(0, v, x(v));
      return;
    }
    // The input index of output element v: with keepdims the ranks agree; without, the kept
    // axes are v in order. Reduced entries are ignored by RowStat::at.
    std::vector<Expr> idx;
    bool keep = b.attrs().get_int("keepdims", 1) != 0;
    for (int d = 0, k = 0; d < x.rank(); ++d) idx.push_back(keep ? Expr(v[d]) : reduced[d] ? Expr(0) : Expr(v[k++]));
    // float32 inputs accumulate in float32; int64 sums stay exact in int64.
    IndexExpr value = [&](const std::vector<Expr>& i) { return x(i); };
    ReduceKind kind = ReduceKind::Sum;
    Expr row_max;  // LogSumExp: the row's max, subtracted before the exponentials
    switch (op) {
      case ReduceOp::Max: kind = ReduceKind::Max; break;
      case ReduceOp::Min: kind = ReduceKind::Min; break;
      case ReduceOp::Prod: kind = ReduceKind::Prod; break;
      case ReduceOp::L1: value = [&](const std::vector<Expr>& i) { return abs(x(i)); }; break;
      case ReduceOp::L2:
      case ReduceOp::SumSquare: value = [&](const std::vector<Expr>& i) { return x(i) * x(i); }; break;
      case ReduceOp::LogSumExp: {
        RowStat mx = reduce_stage(b, "max", x.dims(), reduced, ReduceKind::Max, value);
        // A row of -inf (or empty) has max -inf: shifted by 0 instead, it sums to 0 and logs to -inf.
        auto shift = [mx](const std::vector<Expr>& i) {
          Expr m = mx.at(i);
          return select(is_inf_f32(m), 0.0f, m);
        };
        row_max = shift(idx);
        value = [&, shift](const std::vector<Expr>& i) { return exp_f32(x(i) - shift(i)); };
        break;
      }
      default: break;
    }
    RowStat stat = reduce_stage(b, "red", x.dims(), reduced, kind, value);
    Expr e = stat.at(idx);
    if (op == ReduceOp::L2) e = sqrt(e);
    if (op == ReduceOp::LogSum) e = log_f32(e);
    if (op == ReduceOp::LogSumExp) e = row_max + log_f32(e);
    if (op == ReduceOp::Mean) {
      Expr n = reduced_count(x.dims(), reduced);
      if (std::optional<int64_t> c = const_value(n))
        e = e.type().is_float() ? e / static_cast<float>(*c)
                                : div_round_to_zero(e, Internal::make_const(e.type(), std::max<int64_t>(*c, 1)));
      else  // symbolic count: the same division, by the runtime count
        e = e.type().is_float() ? e / cast<float>(n) : div_round_to_zero(e, cast(e.type(), max(n, 1)));
    }
    b.define_output(0, v, e);
  };
  r.add(std::move(s));
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  add_reduce(r, "ReduceMean", ReduceOp::Mean);
  add_reduce(r, "ReduceSum", ReduceOp::Sum);
  add_reduce(r, "ReduceMax", ReduceOp::Max);
  add_reduce(r, "ReduceMin", ReduceOp::Min);
  add_reduce(r, "ReduceProd", ReduceOp::Prod);
  add_reduce(r, "ReduceL1", ReduceOp::L1);
  add_reduce(r, "ReduceL2", ReduceOp::L2);
  add_reduce(r, "ReduceSumSquare", ReduceOp::SumSquare);
  add_reduce(r, "ReduceLogSum", ReduceOp::LogSum);
  add_reduce(r, "ReduceLogSumExp", ReduceOp::LogSumExp);
  add_reduce(r, "GlobalAveragePool", ReduceOp::Mean, /*spatial=*/true);
  add_reduce(r, "GlobalMaxPool", ReduceOp::Max, /*spatial=*/true);
}

}  // namespace gaf
