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
  if (args.size() >= 2 && shape.size() >= 2 && shape_numel(shape) >= 4096)
    f.parallel(args.back());
}

}  // namespace

void apply_reference_schedule(const std::vector<TensorFunc>& outputs,
                              const std::vector<Stage>& stages) {
  for (const Stage& s : stages) {
    Func f = s.func;
    f.compute_root();
    if (s.role == StageRole::Accumulator && f.has_update_definition() && !s.reduction.empty()) {
      // MatMul accumulator: k outside the vectorised output columns, so each step is a row-wide
      // FMA on contiguous memory rather than a strided dot product.
      std::vector<Var> args = f.args();
      std::vector<VarOrRVar> order;
      order.emplace_back(args[0]);
      for (const RVar& r : s.reduction) order.emplace_back(r);
      for (size_t i = 1; i < args.size(); ++i) order.emplace_back(args[i]);
      f.update().reorder(order);
      f.update().vectorize(args[0], 8, TailStrategy::GuardWithIf);
      if (args.size() >= 2) f.update().parallel(args.back());
      f.vectorize(args[0], 8, TailStrategy::GuardWithIf);
    }
  }
  for (const TensorFunc& t : outputs) {
    if (!t.defined()) continue;
    schedule_pure(t.func, t.shape);
  }
}

}  // namespace gaf
