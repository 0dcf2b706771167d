// Runs a graph by its FusionPlan: each group one JIT-compiled Halide pipeline (groups with the
// same signature share one kernel: BERT's 12 layers compile once), in plan order, intermediates
// freed after their last reader. With a plan of single-node groups this is the unfused baseline
// (every op alone, same schedules).
#pragma once

#include "generators/shape_classes.h"
#include "generators/value_store.h"
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "fusion/planner/plan.h"
#include "generators/group_kernel.h"
#include "generators/kv_cache.h"
#include "generators/reference_executor.h"
#include "schedules/schedule_db.h"

namespace gaf {

// Called after each group's kernel is ready (compiled or shared): groups done so far, the group.
using CompileProgress = std::function<void(size_t done, const FusionGroup& grp)>;

struct ExecutorOptions {
  // A group whose signature this database holds for this machine (host) or for `npu`'s
  // npu_machine_key (npu-tile) uses the tuned parameters (stats() counts them, tuned() tells
  // which); the others the target's defaults.
  const ScheduleDb* schedules = nullptr;
  // The NPU tile model: every group with the NPU schedules for this target, run on the host, its
  // staging copies counted by the simulator (npu_counts()). GafError when a tile cannot fit.
  const NpuTarget* npu = nullptr;
  CompileProgress progress;
  // The ranks of a tensor-parallel run, for groups with collectives (generators/comm_kernel.h).
  Communicator* comm = nullptr;
  // KV caches the runtime owns (kv_cache.h: bind_kv_caches has marked their values), by present.
  std::map<std::string, KvCacheBinding> kv_caches;
};

class FusedExecutor {
 public:
  using CompileProgress = gaf::CompileProgress;
  // Compiles every distinct group signature now (compile time is in stats()).
  explicit FusedExecutor(const Graph& g, const FusionPlan& plan, const ExecutorOptions& opts = {});
  // Runs the graph into `outputs`, which the caller keeps across runs: a graph output already
  // there with the planned dtype and shape is computed in place, any other is allocated there.
  // A KV cache's present is a window of a block (kv_cache.h): the block of its past input when
  // that is a window of a block of the same capacity — appended in place, so rows after the past
  // in that block are the runtime's to overwrite — else the block already in `outputs`, else a
  // new one; past is copied into it only when it is not already there.
  // Intermediates live in one arena laid out by plan_memory (allocated once at compile), so a
  // steady-state run allocates no tensor memory and takes no page faults. Not re-entrant: one
  // run at a time per executor.
  void run(const TensorMap& inputs, TensorMap& outputs);
  // The same into fresh output tensors.
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
  std::vector<std::string> npu_tiles(size_t s) const { return kernels_[current_].at(s)->npu_tiles(); }
  // With dynamic dims: the size classes each group has a kernel for (shape_classes.h).
  const std::vector<ShapeClass>& shape_classes() const { return classes_; }

 private:
  void compile(const ExecutorOptions& opts);

  const Graph& g_;
  const FusionPlan& plan_;
  std::vector<ShapeClass> classes_;  // one (static) without dynamic dims
  size_t current_ = 0;               // the class of the last run (first: the one holding the upper bounds)
  SymBindings dims_;                 // the last run's dynamic dims (first: the upper bounds)
  // Per class, per group (kernel_numbering.h: groups with one kernel key share the object).
  std::vector<std::vector<std::shared_ptr<GroupKernel>>> kernels_;
  ExecStats stats_;
  bool profile_ = false;
  std::vector<double> group_ms_;
  std::vector<bool> tuned_;
  bool npu_ = false;
  Communicator* comm_ = nullptr;  // tensor parallel: profiling starts every group on all ranks at once
  std::vector<NpuCounts> npu_counts_;
  std::shared_ptr<uint8_t> arena_;                 // run()'s intermediates (see run)
  std::map<std::string, int64_t> arena_offset_;   // value -> offset in arena_
  std::set<std::string> graph_outputs_, computed_outputs_;  // the latter: written by some group
  // The values a run touches, numbered at compile so that a run looks up no name per group (a
  // decode step of 85 groups spent 0.75 ms of 13 in string-keyed maps): per slot the graph's
  // constant (or null) and whether it outlives the run's steps (graph inputs and outputs); per
  // group the slots it reads and writes (-1: an empty name) and those it frees after it (read for
  // the last time there, or written and never read).
  struct Slots {
    std::map<std::string, int> of;
    std::vector<const Tensor*> constant;
    std::vector<bool> keep;
    std::vector<std::vector<int>> in, out, release;
  } slots_;
  std::vector<Tensor> env_;  // the run's values by slot
  std::vector<bool> live_;
  void number_slots();
  // Per group, the members with an index input (OpSchema::index_input: Gather's indices) whose
  // inputs all come from outside the group: checked on the host before the kernel runs, since
  // the compiled algorithm clamps. Empty for most groups (BERT has none).
  std::vector<std::vector<int>> input_checks_;
  void check_member_inputs(size_t s, const std::vector<const Tensor*>& group_inputs) const;
  // Group s's output tensors, in FusionGroup::outputs order: with `caller` (run()), graph
  // outputs in the caller's map (reused when they fit) and intermediates in the arena; else fresh.
  std::vector<Tensor> output_tensors(size_t s, TensorMap* caller);
  std::vector<Tensor> run_kernel(size_t s, const std::vector<const Tensor*>& inputs, std::vector<Tensor> outs);
  std::map<std::string, KvCacheBinding> kv_caches_;
  // The run's cache windows, by present: the whole (rows [0, past + seq)) and what its group writes.
  struct CacheWindows {
    Tensor whole, written;
  };
  std::map<std::string, CacheWindows> cache_windows_;
  // Binds cache_windows_ for a run; returns the inputs with each past that had to be copied into
  // its block replaced by that copy (nullopt: every past is in its block already).
  std::optional<TensorMap> bind_cache_windows(const TensorMap& inputs, TensorMap& outputs);
};

}  // namespace gaf
