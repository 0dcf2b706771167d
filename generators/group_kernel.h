// One fused group lowered to one Halide pipeline: the members' algorithms composed (each
// member's inputs are either the group's inputs or other members' Funcs), the plan's compute
// decisions applied through the fused schedule, JIT-compiled for the host.
#pragma once

#include <memory>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "fusion/ops/registry.h"
#include "runtime/communicator.h"
#include "runtime/npu_sim.h"
#include "schedules/host_params.h"
#include "schedules/npu_params.h"

namespace gaf {

class GroupKernel {
 public:
  virtual ~GroupKernel() = default;
  // inputs[k] is the tensor of group input k (FusionGroup::inputs order); outputs are
  // preallocated with output_descs() shapes (with dynamic dims: their shapes at `dims`), in
  // FusionGroup::outputs order. `dims`: the run's value of every dynamic dim (none: their upper
  // bounds, where the graph is typed).
  virtual void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                   const SymBindings& dims = {}) = 0;
  virtual const std::vector<TensorDesc>& output_descs() const = 0;
  // The same behind the plan runner's kernel interface (runtime/plan_runner.h: PlanKernel):
  // args are halide_buffer_t* for the `n_inputs` inputs (FusionGroup::inputs order; null for an
  // empty name), an int32_t* per dynamic dim of `dim_names` (the graph's order), then the
  // buffers of the outputs that are not zero-sized, all dense. Returns 0; a failure is a
  // GafError naming the kernel. This default wraps the buffers as tensors and calls run(); a
  // host kernel calls its entry point directly.
  virtual int run_argv(void** args, size_t n_inputs, const std::vector<std::string>& dim_names);
  // NPU tile model kernels: what the simulator needs to count their trace, and their tiles.
  virtual const NpuStageMap* npu_stages() const { return nullptr; }
  virtual std::vector<std::string> npu_tiles() const { return {}; }
  // Non-empty when the kernel fell back to the reference schedule: why (see lower_group_pipeline).
  virtual const std::string& schedule_fallback() const = 0;
};

// Who schedules the group: graph-autofusion's host schedules with the given parameters,
// Halide's Mullapudi2016 autoscheduler (for comparison in gaf-tune; needs its plugin), or the
// NPU tile model's schedules (schedules/npu_schedule.h; run on the host, traced for the simulator).
// Reference: every stage at root, outputs vectorised (schedules/reference_schedule.h) — the
// fallback for a group whose host schedule Halide cannot lower with dynamic extents.
enum class ScheduleSource { Host, Mullapudi2016, NpuTile, Reference };

// How one group's kernel is scheduled (the JIT kernel and the AOT GroupPipeline alike).
struct KernelOptions {
  HostScheduleParams params;  // the host schedules' parameters (the target's defaults or a tuned entry)
  ScheduleSource source = ScheduleSource::Host;
  const NpuTarget* npu = nullptr;  // NpuTile: the target whose buffers the tiles fit
  NpuScheduleParams npu_params;    // NpuTile: tile overrides (gaf-tune)
  // The ranks a group's collectives (AllReduce, AllGather) run across; null: one process.
  Communicator* comm = nullptr;
};

// `g` must be typed (with dynamic dims: at the point whose schedule the kernel gets, see
// shape_classes.h); value inputs of members must be constants.
std::unique_ptr<GroupKernel> compile_group_kernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts);

}  // namespace gaf
