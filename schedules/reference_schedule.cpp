#include "schedules/reference_schedule.h"

namespace gaf {

using namespace Halide;

namespace {

// Vectorise the innermost pure dim (ONNX's last axis) when it is wide enough and parallelise the
// outermost one when it has enough work. 8 lanes = one AVX2 register of float32; kept modest so the
// reference stays simple and robust at odd sizes (tails are guarded by GuardWithIf).
void schedule_pure(Func f, const Shape& shape) {
  std::vector<Var> args = f.args();
  if (args.empty()) return;
  if (!shape.empty() && shape.back() >= 8) f.vectorize(args[0], 8, TailStrategy::GuardWithIf);
  if (args.size() >= 2 && shape.size() >= 2 && shape_numel(shape) >= 4096) f.parallel(args.back());
}

}  // namespace

bool schedule_accumulator(const Stage& s) {
  Func f = s.func;
  std::vector<Var> a = f.args();
  if (s.role != StageRole::Accumulator || a.empty() || !f.has_update_definition() || s.reduction.empty()) return false;
  std::vector<VarOrRVar> order{a[0]};
  for (const RVar& r : s.reduction) order.emplace_back(r);
  for (size_t i = 1; i < a.size(); ++i) order.emplace_back(a[i]);
  f.update().reorder(order);
  f.update().vectorize(a[0], 8, TailStrategy::GuardWithIf);
  f.vectorize(a[0], 8, TailStrategy::GuardWithIf);
  return true;
}

void apply_reference_schedule(const std::vector<TensorFunc>& outputs, const std::vector<Stage>& stages) {
  for (const Stage& s : stages) {
    // Inlined into the accumulator, but a reduction (an int8 MatMul's row scales) cannot be.
    if (s.role == StageRole::Operand && !s.func.has_update_definition()) continue;
    Func f = s.func;
    f.compute_root();
    // At root the accumulator is its own loop nest: parallel over its rows too.
    if (schedule_accumulator(s) && f.args().size() >= 2) f.update().parallel(f.args().back());
  }
  for (const TensorFunc& t : outputs) {
    if (!t.defined()) continue;
    schedule_pure(t.func, t.shape);
  }
}

}  // namespace gaf
