// Runs a graph by its FusionPlan: each group one JIT-compiled Halide pipeline (groups with the
// same signature share one kernel: BERT's 12 layers compile once), in plan order, intermediates
// freed after their last reader. With a plan of single-node groups this is the unfused baseline
// (every op alone, same schedules).
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "fusion/planner/plan.h"
#include "generators/group_kernel.h"
#include "generators/reference_executor.h"
#include "schedules/schedule_db.h"

namespace gaf {

class FusedExecutor {
 public:
  // Called after each group's kernel is ready (compiled or shared): groups done so far, the group.
  using CompileProgress = std::function<void(size_t done, const FusionGroup& grp)>;
  // Compiles every distinct group signature now (compile time is in stats()). With `schedules`,
  // a group whose signature it holds for this machine uses the tuned parameters (stats()
  // counts them, tuned() tells which), the others the target's defaults.
  explicit FusedExecutor(const Graph& g, const FusionPlan& plan, const ScheduleDb* schedules = nullptr,
                         const CompileProgress& progress = {});
  // The NPU tile model: every group with the NPU schedules for `npu`, run on the host, its
  // staging copies counted by the simulator (npu_counts()). GafError when a tile cannot fit.
  // With `schedules`, a group whose signature it holds for target "npu-tile" and this NPU target
  // (npu_machine_key) uses gaf-tune's tile overrides.
  FusedExecutor(const Graph& g, const FusionPlan& plan, const NpuTarget& npu, const CompileProgress& progress = {});
  FusedExecutor(const Graph& g, const FusionPlan& plan, const NpuTarget& npu, const ScheduleDb* schedules,
                const CompileProgress& progress = {});
  // Intermediates live in one arena laid out by plan_memory (allocated once, reused by every
  // run: no allocation or page fault per run); graph outputs are allocated per run. Not
  // re-entrant: one run at a time per executor.
  TensorMap run(const TensorMap& inputs);
  // Runs group `s` alone: inputs in FusionGroup::inputs order, outputs in FusionGroup::outputs
  // order (gaf verify feeds it the reference's tensors).
  std::vector<Tensor> run_group(size_t s, const std::vector<const Tensor*>& inputs);
  const ExecStats& stats() const { return stats_; }
  // Time per group of the last run (milliseconds), when profiling is on.
  void set_profiling(bool on) { profile_ = on; }
  const std::vector<double>& group_ms() const { return group_ms_; }
  // Per group: whether its kernel uses tuned parameters.
  const std::vector<bool>& tuned() const { return tuned_; }
  // NPU tile model only: per group, what the simulator counted in the last run; the tiles.
  const std::vector<NpuCounts>& npu_counts() const { return npu_counts_; }
  std::vector<std::string> npu_tiles(size_t s) const { return kernels_.at(s)->npu_tiles(); }

 private:
  void compile(const ScheduleDb* schedules, const CompileProgress& progress, const NpuTarget* npu);

  const Graph& g_;
  const FusionPlan& plan_;
  std::map<std::string, std::shared_ptr<GroupKernel>> by_signature_;
  std::vector<std::shared_ptr<GroupKernel>> kernels_;  // per group
  ExecStats stats_;
  bool profile_ = false;
  std::vector<double> group_ms_;
  std::vector<bool> tuned_;
  bool npu_ = false;
  std::vector<NpuCounts> npu_counts_;
  std::shared_ptr<uint8_t> arena_;                 // run()'s intermediates (see run)
  std::map<std::string, int64_t> arena_offset_;   // value -> offset in arena_
  // Per group, the members whose schema checks input contents (Gather's indices) and whose
  // inputs all come from outside the group: checked on the host before the kernel runs, since
  // the compiled algorithm clamps. Empty for most groups (BERT has none).
  std::vector<std::vector<int>> input_checks_;
  void check_member_inputs(size_t s, const std::vector<const Tensor*>& group_inputs) const;
  // Group s's output tensors, in FusionGroup::outputs order: in the arena when `in_arena`.
  std::vector<Tensor> output_tensors(size_t s, bool in_arena);
  std::vector<Tensor> run_kernel(size_t s, const std::vector<const Tensor*>& inputs, std::vector<Tensor> outs);
};

}  // namespace gaf
