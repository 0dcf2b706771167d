// Runs a plan on the NPU tile model twice — fused, and every op its own kernel (the unfused
// baseline, same NPU schedules) — and collects what the simulator counted per group: GM bytes,
// launches, cube and vector work, modeled time per pipe. `gaf report --target npu-tile` prints it.
#pragma once

#include <string>
#include <vector>

#include "generators/plan_profiler.h"
#include "runtime/npu_sim.h"
#include "schedules/schedule_db.h"

namespace gaf {

struct NpuGroupModel {
  NpuCounts fused;                 // the group as one NPU kernel
  NpuCounts unfused;               // its member ops, each its own kernel
  double fused_us = 0;             // modeled
  double unfused_us = 0;           // sum of its members' modeled times
  std::vector<std::string> tiles;  // the tiles the NPU schedule chose for the fused kernel
  double saved_us() const { return unfused_us - fused_us; }
};

struct NpuPlanModel {
  NpuTarget target;
  std::vector<NpuGroupModel> groups;  // per FusionPlan group id
  NpuCounts fused, unfused;           // whole forward pass
  double fused_us = 0, unfused_us = 0;
  NpuModeledTime fused_pipes, unfused_pipes;  // per pipe, summed over kernels
  double max_abs_diff = 0;                    // fused vs unfused outputs on the NPU model (they must agree)
  // Ranks of the graph's collectives (--tp): modeled over the target's links, run on the host as
  // rank 0 without the other ranks' data, so the outputs are not compared (max_abs_diff 0).
  int ranks = 1;
  int tuned_groups = 0;  // fused groups that used a tuned entry of the schedule database
};

// With `schedules`, groups tuned by gaf-tune --target npu-tile for `target` use their tiles (fused
// and unfused alike: a single-op group with a tuned signature is the same kernel).
NpuPlanModel model_plan_on_npu(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, const NpuTarget& target,
                               const ProfileProgress& progress = {}, const ScheduleDb* schedules = nullptr);

}  // namespace gaf
