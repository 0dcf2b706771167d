// Runs a graph by its FusionPlan in this process: the plan's executable form (executable.h: the
// plan gaf compile would write, each distinct group one JIT-compiled Halide pipeline — BERT's
// 12 layers compile once — and the graph's weights) run by the plan runner, the AOT runtime
// (runtime/plan_runner.h): groups in plan order over one arena, KV caches appended in place,
// index checks before the kernels that clamp. With a plan of single-node groups this is the
// unfused baseline (every op alone, same schedules).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "fusion/planner/plan.h"
#include "generators/executable.h"
#include "generators/reference_executor.h"
#include "generators/shape_classes.h"
#include "runtime/plan_runner.h"

namespace gaf {

using ExecutorOptions = ExecutableOptions;

class FusedExecutor {
 public:
  using CompileProgress = gaf::CompileProgress;
  // Compiles every distinct group kernel now (compile time is in stats()). `g` and `plan` must
  // outlive the executor.
  explicit FusedExecutor(const Graph& g, const FusionPlan& plan, const ExecutorOptions& opts = {});
  ~FusedExecutor();
  // Runs the graph into `outputs`, which the caller keeps across runs: an output already there
  // with the planned dtype and shape is written in place, any other is allocated there. A KV
  // cache's present is a window of a block (PlanRunner::run). Inputs are checked against the
  // graph first (names, dtypes, shapes, dims); an input with a default (an initializer) may be
  // left out. A steady-state run allocates no tensor memory. One run at a time per executor.
  void run(const TensorMap& inputs, TensorMap& outputs);
  // The same into fresh output tensors.
  TensorMap run(const TensorMap& inputs);
  // Runs group `s` alone: inputs in FusionGroup::inputs order, outputs in FusionGroup::outputs
  // order (gaf verify feeds it the reference's tensors).
  std::vector<Tensor> run_group(size_t s, const std::vector<const Tensor*>& inputs);
  const ExecStats& stats() const { return stats_; }
  // Time per group of the last run (milliseconds), when profiling is on.
  void set_profiling(bool on) { runner_->set_profiling(on); }
  const std::vector<double>& group_ms() const { return runner_->group_ms(); }
  // Per group: whether its kernel uses tuned parameters.
  const std::vector<bool>& tuned() const { return exec_.tuned; }
  // NPU tile model only: per group, what the simulator counted in the last run; the tiles.
  const std::vector<NpuCounts>& npu_counts() const { return runner_->npu_counts(); }
  std::vector<std::string> npu_tiles(size_t s) const;
  // With dynamic dims: the size classes each group has a kernel for (shape_classes.h).
  const std::vector<ShapeClass>& shape_classes() const { return exec_.numbering.classes; }
  // What runs: the plan and its kernels (Engine::executable builds the same).
  const Executable& executable() const { return exec_; }

 private:
  const Graph& g_;
  const FusionPlan& plan_;
  Executable exec_;
  std::unique_ptr<PlanRunner> runner_;
  ExecStats stats_;
  std::vector<std::string> defaults_;  // graph inputs with a default value (an initializer)
};

}  // namespace gaf
