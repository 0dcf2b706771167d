#include "schedules/row_schedule.h"

#include <algorithm>

namespace gaf {

using namespace Halide;

Placement Placement::at(Func f, Var v) {
  Placement p;
  p.root = false;
  p.func = f;
  p.var = v;
  return p;
}

void Placement::apply(Func f) const {
  if (root)
    f.compute_root();
  else
    f.compute_at(func, var);
}

Var fuse_parallel(Func f, Var first, const std::vector<Var>& outer) {
  Var fused = first;
  for (size_t i = 0; i < outer.size(); ++i) {
    Var next(f.name() + "_par" + std::to_string(i));
    f.fuse(fused, outer[i], next);
    fused = next;
  }
  f.parallel(fused);
  return fused;
}

namespace {

// The widest of lanes, lanes/2, ..., 4 that fits in `extent` (0: too narrow to vectorise).
int vector_width(int64_t extent, int lanes) {
  for (int w = lanes; w >= 4; w /= 2)
    if (extent >= w) return w;
  return 0;
}

}  // namespace

Placement schedule_rows(const TensorFunc& t, const HostScheduleParams& p) {
  Func f = t.func;
  std::vector<Var> a = f.args();
  f.compute_root();
  if (a.empty()) return Placement();
  int64_t inner = t.shape.back(), numel = shape_numel(t.shape);
  int w = vector_width(inner, p.lanes);
  if (a.size() == 1) {
    // One long axis: chunks of it are the parallel tasks.
    if (numel >= 2 * p.rows.task_elems) {
      Var o(f.name() + "_task"), i(f.name() + "_in");
      f.split(a[0], o, i, static_cast<int>(p.rows.task_elems), TailStrategy::GuardWithIf).parallel(o);
      if (w) f.vectorize(i, w, TailStrategy::GuardWithIf);
    } else if (w) {
      // ShiftInwards where the extent is static (w is at most it), as for rows below:
      // ReduceLogSum to a [5] output lost its last element under GuardWithIf (log_f32's tests on
      // the statistic). A dynamic extent may be below w at run time.
      f.vectorize(a[0], w, t.is_static() ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf);
    }
    return Placement();
  }
  // ShiftInwards (the row is at least w wide): with GuardWithIf, Halide 14's loop partitioning
  // drops the predicated tail store when its value compares data read from a statistic computed
  // at the row (exp_f32's NaN test in Softmax: the last columns were never written).
  if (w) f.vectorize(a[0], w, TailStrategy::ShiftInwards);
  Var rows = a[1];
  for (size_t i = 2; i < a.size(); ++i) {
    Var fused(f.name() + "_rows" + std::to_string(i));
    f.fuse(rows, a[i], fused);
    rows = fused;
  }
  int64_t nrows = numel / std::max<int64_t>(inner, 1);
  int64_t per_task = std::max<int64_t>(1, p.rows.task_elems / std::max<int64_t>(inner, 1));
  if (nrows >= 2 * per_task) {
    Var o(f.name() + "_task"), i(f.name() + "_row");
    f.split(rows, o, i, static_cast<int>(per_task), TailStrategy::GuardWithIf).parallel(o);
    return Placement::at(f, i);
  }
  if (numel >= p.rows.task_elems && nrows > 1) f.parallel(rows);
  return Placement::at(f, rows);
}

Var transpose_tiles(Func f, int dim, int lanes) {
  std::vector<Var> a = f.args();
  const int rank = static_cast<int>(a.size());
  Var xo(f.name() + "_xo"), xi(f.name() + "_xi"), yo(f.name() + "_yo"), yi(f.name() + "_yi");
  // GuardWithIf: the dims need not be multiples of the tile (BERT's are; odd models' are not),
  // and the guarded edge tiles write nothing twice.
  f.tile(a[0], a[dim], xo, yo, xi, yi, lanes, lanes, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{xi, yi, xo, yo};
  for (int d = 1; d < rank; ++d)
    if (d != dim) order.emplace_back(a[d]);
  f.reorder(order);
  f.vectorize(xi).unroll(yi);
  return yo;
}

void schedule_transpose(const TensorFunc& t, int dim, const HostScheduleParams& p) {
  Func f = t.func;
  std::vector<Var> a = f.args();
  f.compute_root();
  Var yo = transpose_tiles(f, dim, p.lanes);
  std::vector<Var> outer;
  for (int d = 1; d < static_cast<int>(a.size()); ++d)
    if (d != dim) outer.push_back(a[d]);
  fuse_parallel(f, yo, outer);
}

void schedule_row_values(const Stage& s, const Placement& at, const HostScheduleParams& p) {
  Func f = s.func;
  if (at.root || f.dimensions() == 0 || f.has_update_definition()) return;
  at.apply(f);
  f.vectorize(f.args()[0], p.lanes, TailStrategy::GuardWithIf);
}

void schedule_statistic(const Stage& s, const Placement& at, const HostScheduleParams& p) {
  Func f = s.func;
  at.apply(f);
  if (s.reduction.size() > 1 && at.root && f.has_update_definition() && f.dimensions() > 0) {
    // A window per element (MaxPool, AveragePool: one value per output position) or a reduction
    // over several axes, at root: vectorised along its innermost axis with the reduction loops
    // outside the vector, parallel over its outer axes (sequential and scalar before: ResNet-50's
    // 3x3/2 MaxPool took 0.8 ms).
    std::vector<Var> a = f.args();
    std::vector<VarOrRVar> order{a[0]};
    for (const RVar& r : s.reduction) order.emplace_back(r);
    for (size_t i = 1; i < a.size(); ++i) order.emplace_back(a[i]);
    Halide::Stage u = f.update();
    u.reorder(order).vectorize(a[0], p.lanes, TailStrategy::GuardWithIf);
    f.vectorize(a[0], p.lanes, TailStrategy::GuardWithIf);
    if (a.size() >= 3) {
      Var fused(f.name() + "_outer");
      u.fuse(a[a.size() - 2], a.back(), fused).parallel(fused);
    }
    return;
  }
  if (s.reduction.size() != 1 || !f.has_update_definition()) return;
  // A constant extent must be whole vectors; a symbolic one (a dynamic dim, e.g. Softmax over
  // seq) gets a guarded split: the lanes past the end take no part (Halide predicates them).
  const int64_t* extent = as_const_int(s.reduction[0].extent());
  if (extent && (*extent % p.lanes != 0 || *extent < 2 * p.lanes)) return;
  // Partial results per lane, then one horizontal reduction: the sum's association changes
  // (within fp32 rounding of a sequential sum), the unfused baseline uses the same schedule.
  RVar ro(f.name() + "_ro"), ri(f.name() + "_ri");
  Var lane(f.name() + "_lane");
  Func partial;
  try {
    partial = f.update().split(s.reduction[0], ro, ri, p.lanes).rfactor(ri, lane);
  } catch (const CompileError&) {
    return;  // not an associative update Halide recognises: keep the sequential one
  }
  at.apply(partial);
  partial.vectorize(lane);
  partial.update().vectorize(lane);
}

}  // namespace gaf
