// The executable form of a plan, one for both paths: the plan file's content (AotPlan: inputs,
// outputs, the arena, the groups with their kernels by number, index checks, KV caches), its
// kernels — JIT-compiled in this process, or objects for gaf compile's library (aot_compiler.h)
// — and its weights. The plan runner (runtime/plan_runner.h) runs it either way: in this process
// (Executable::runner, gaf run) or from the library's files. With a plan of single-node groups
// this is the unfused baseline (every op alone, same schedules). No Halide.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/group_kernel.h"
#include "generators/kernel_numbering.h"
#include "generators/kv_cache.h"
#include "generators/memory_plan.h"
#include "generators/reference_executor.h"
#include "runtime/aot_plan.h"
#include "runtime/communicator.h"
#include "runtime/npu_target.h"
#include "runtime/plan_runner.h"
#include "schedules/schedule_db.h"

namespace gaf {

// ---- The plan's content (shared with gaf compile) ----

// What a plan records of its kernels: kernel i of the numbering is the function NAME_k<i>.
struct PlanKernels {
  std::vector<ShapeClass> classes;
  std::vector<AotKernel> kernels;                     // by number; function "" when it computes nothing
  std::vector<std::vector<std::string>> fn_of_group;  // [group][class]
};
// Per group, its function per class (NAME_k<kernel number>).
std::vector<std::vector<std::string>> kernel_function_names(const KernelNumbering& n, const FusionPlan& plan,
                                                            const std::string& name);
// The plan of `g` (as it is: packed or not) with the memory plan `mp` and the kernels `ks`;
// `npu`: the NPU tile model's target (else host). Weights and the hash are the caller's to add.
AotPlan make_aot_plan(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, const std::string& name,
                      const std::string& model, const NpuTarget* npu, const PlanKernels& ks);
// Kernel `fn`'s plan entry, compiled from `grp` (`fn` "" when it computes nothing), with the NPU
// tile model's stage map and tiles when it has them (what the simulator counts, the tiles chosen).
AotKernel aot_kernel_entry(const std::string& fn, const FusionGroup& grp, bool tuned, const NpuStageMap* npu_stages,
                           const std::vector<std::string>& npu_tiles);
// "g<id> (<size class>): <why>": a kernel on the reference schedule (ExecStats::schedule_fallbacks,
// AotResult::schedule_fallbacks).
std::string schedule_fallback_line(const FusionGroup& grp, const ShapeClass& cls, const std::string& why);
// Every constant the groups read (and constant graph outputs), 64-byte aligned; `total` gets the
// weights file's size.
std::vector<AotWeight> weight_entries(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, int64_t& total);

// ---- The kernels, built once per distinct key ----

// Called after each group's kernel is ready (compiled or shared): groups done so far, the group.
using CompileProgress = std::function<void(size_t done, const FusionGroup& grp)>;

// One distinct kernel of the numbering: the function `function` (NAME_k<i>, kernel_function_names),
// compiled from group `grp` on `g` (typed at size class `cls`) with `options` (the target's
// defaults, or `tuned`'s parameters).
struct KernelSite {
  std::string function;
  const ShapeClass* cls = nullptr;
  const Graph* g = nullptr;
  const FusionGroup* grp = nullptr;
  const TunedSchedule* tuned = nullptr;
  KernelOptions options;
};

// What a backend made of a kernel.
struct BuiltKernel {
  bool computes = false;                  // some output is not zero-sized: the plan names its function
  std::string fallback;                   // non-empty: on the reference schedule, and why (lower_group_pipeline)
  std::optional<NpuStageMap> npu_stages;  // the NPU tile model's stage map, and its tiles
  std::vector<std::string> npu_tiles;
  PlanKernel call;  // JIT: the kernel behind the runner's interface; empty when it is an object file
};

// How a kernel becomes code: JIT-compiled in this process (the default backend) or an object of
// a static library (gaf compile, aot_compiler.cpp). build_executable makes every other decision.
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;
  // The host schedules' parameters of a kernel without a tuned entry (its target's).
  virtual HostScheduleParams default_params() const = 0;
  virtual BuiltKernel build(const KernelSite& site) = 0;
};

struct ExecutableOptions {
  // A group whose signature this database holds for this machine (host) or for `npu`'s
  // npu_machine_key (npu-tile) uses the tuned parameters; the others the target's defaults.
  const ScheduleDb* schedules = nullptr;
  // The NPU tile model: every group with the NPU schedules for this target, run on the host, its
  // staging copies counted by the simulator. GafError when a tile cannot fit.
  const NpuTarget* npu = nullptr;
  CompileProgress progress;
  // The ranks of a tensor-parallel run, for groups with collectives (generators/comm_kernel.h).
  Communicator* comm = nullptr;
  // KV caches the runtime owns (bind_kv_caches has marked their values), by present.
  std::map<std::string, KvCacheBinding> kv_caches;
  // Null: every kernel JIT-compiled for this machine. gaf compile passes its object writer.
  KernelBackend* backend = nullptr;
  std::string model;  // recorded in the plan; empty: the graph's name
};

struct Executable {
  AotPlan plan;
  std::map<std::string, PlanKernel> kernels;  // by function name, for PlanRunner
  std::map<std::string, Tensor> weights;      // the graph's constants (shared, not copied)
  // What building it did: kernels compiled and shared, compile time, tuned groups, fallbacks
  // (the peak is the runner's: PlanRunner::peak_bytes).
  ExecStats stats;
  std::vector<bool> tuned;  // per group
  KernelNumbering numbering;
  // JIT kernels: the one runner (runtime/plan_runner.h) over this plan, its kernels and weights;
  // with a tensor-parallel communicator, profiling ranks meet before each group. Null when the
  // kernels are object files (gaf compile).
  std::unique_ptr<PlanRunner> runner;

  // The NPU tile model: the tiles of group `s`'s kernel (its first size class).
  std::vector<std::string> npu_tiles(size_t s) const;
};

// The one builder of a plan's kernels, for gaf run and gaf compile alike: the plan gaf compile
// writes for `g` as it is (packed or not), each distinct kernel of the one numbering built once
// by the backend (JIT-compiled by compile_group_kernel unless opts.backend says otherwise),
// named NAME_k<i>, with the tuned parameters the schedule database holds for its group; the
// weights are `g`'s constants. The kernels were built from `g`: keep it alive while they run.
Executable build_executable(const Graph& g, const FusionPlan& plan, const std::string& name = "gaf",
                            const ExecutableOptions& opts = {});

}  // namespace gaf
