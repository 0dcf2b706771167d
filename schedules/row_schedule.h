// The host schedule of row-wise work (normalisations, softmax, elementwise chains, layout ops):
// vectorised along the innermost axis, the outer axes fused into one row loop split into
// parallel tasks; per-row statistics computed inside that loop with vectorised partial sums.
#pragma once

#include "fusion/ops/op_builder.h"
#include "schedules/host_params.h"

namespace gaf {

// Where a Func is computed: at root, or inside a Func's loop over `var`. (Halide's LoopLevel
// cannot be inspected before lowering, hence this small value type.)
struct Placement {
  bool root = true;
  Halide::Func func;
  Halide::Var var;
  static Placement at(Halide::Func f, Halide::Var v);
  void apply(Halide::Func f) const;  // compute_root or compute_at
};

// Fuses loop `first` with each of `outer` (innermost first) into one loop, parallel; returns it.
// A compute_at at the fused loop still sees one value of every fused var per iteration.
Halide::Var fuse_parallel(Halide::Func f, Halide::Var first, const std::vector<Halide::Var>& outer);

// Computes `t` at root, vectorised and parallel as above. Returns its row loop (one iteration
// per innermost-axis row) for compute_at, or root when `t` has no rows (rank < 2).
Placement schedule_rows(const TensorFunc& t, const HostScheduleParams& p);

// `f` (where it is computed is the caller's) in lanes x lanes tiles of dims 0 and `dim` (> 0),
// vectorised along dim 0 and unrolled along `dim`, tile loops inside the other dims; returns the
// outer tile loop of `dim`. For a Func whose dim `dim` walks its source's innermost axis.
Halide::Var transpose_tiles(Halide::Func f, int dim, int lanes);

// A transpose `t` whose dim `dim` (> 0) walks its input's innermost axis: computed at root in
// lanes x lanes tiles of dims 0 and `dim`, vectorised along dim 0 and unrolled along `dim`, so
// the tile's reads are whole vectors of the input (LLVM turns the unrolled strided loads into
// dense loads and shuffles: 3x faster than one gather per vector at BERT's K^T), tiles parallel.
void schedule_transpose(const TensorFunc& t, int dim, const HostScheduleParams& p);

// A Statistic stage (a reduction whose update runs over `s.reduction`) computed at `at`. A
// reduction over one axis whose extent is a multiple of the vector width is split into
// vectorised partial results (rfactor) before the final horizontal step.
void schedule_statistic(const Stage& s, const Placement& at, const HostScheduleParams& p);

// A RowValues stage (StageRole::RowValues: Softmax's exponentials) computed once per row at `at`,
// where its row's statistics are, vectorised along the row; at root it stays inlined.
void schedule_row_values(const Stage& s, const Placement& at, const HostScheduleParams& p);

}  // namespace gaf
