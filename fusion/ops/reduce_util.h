// Per-row statistics shared by the reduction and normalisation families (reduce.cpp, norm.cpp):
// each statistic is a Statistic stage (compute_root under the reference schedule) whose pure args
// are the kept axes and whose update runs an RDom over the reduced ones, innermost axis innermost.
#pragma once

#include <functional>

#include "fusion/ops/op_builder.h"

namespace gaf {

enum class ReduceKind { Sum, Max, Min, Prod };

// An element of the reduced tensor at a full-rank ONNX-order index.
using IndexExpr = std::function<Halide::Expr(const std::vector<Halide::Expr>&)>;

struct RowStat {
  Halide::Func func;
  std::vector<Halide::Var> args;  // the stage's pure args, Halide order (kept axes only)
  std::vector<bool> reduced;      // per input axis, ONNX order

  // The statistic of the row holding input element `idx` (full rank, ONNX order; the entries
  // of the reduced axes are ignored).
  Halide::Expr at(const std::vector<Halide::Expr>& idx) const;
  Halide::Expr at(const std::vector<Halide::Var>& idx) const;
};

// reduce(value(idx)) over the axes flagged in `reduced` of a tensor with `extents` (ONNX order,
// TensorFunc::dims(): constant or symbolic), accumulated in value's type.
RowStat reduce_stage(BuildContext& b, const std::string& suffix, const std::vector<Halide::Expr>& extents,
                     const std::vector<bool>& reduced, ReduceKind kind, const IndexExpr& value);

// f(statistic) as its own stage over the same rows, so it is computed once per row, not per
// element (e.g. 1/sqrt(var + eps)).
RowStat map_stat(BuildContext& b, const std::string& suffix, const RowStat& s,
                 const std::function<Halide::Expr(const Halide::Expr&)>& f);

// Mean and population variance over the reduced axes in float32 (two passes: the variance sums
// squared deviations from the mean, which keeps precision when |mean| >> std).
struct MeanVar {
  RowStat mean, var;
};
MeanVar mean_var(BuildContext& b, const std::vector<Halide::Expr>& extents, const std::vector<bool>& reduced,
                 const IndexExpr& x);

// Number of elements in one row (the product of the reduced extents), folded: a constant when
// the reduced extents are.
Halide::Expr reduced_count(const std::vector<Halide::Expr>& extents, const std::vector<bool>& reduced);

// 1 / max(n, 1) in float32: folded in double precision when n is a constant (as the static
// algorithm always did), else one runtime division per use site.
Halide::Expr inv_count(const Halide::Expr& n);

}  // namespace gaf
