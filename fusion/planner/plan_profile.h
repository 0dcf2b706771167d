// Measured time of a FusionPlan's groups, fused and unfused, from one process (gaf report
// --profile fills it with generators/plan_profiler.h; the reports read it beside the plan).
#pragma once

#include <vector>

namespace gaf {

struct GroupTiming {
  double fused_ms = 0;      // the group as one kernel (median over the runs)
  double unfused_ms = 0;    // its member ops, each its own kernel (sum of their medians)
  double fused_min_ms = 0;  // the group's fastest run as one kernel (0: not measured)
  double saved_ms() const { return unfused_ms - fused_ms; }
};

struct PlanProfile {
  int runs = 0;                     // timed forward passes per executor
  std::vector<GroupTiming> groups;  // per FusionPlan group id
  double fused_forward_ms = 0;      // median whole forward pass, fused
  double unfused_forward_ms = 0;    // ... every op its own kernel
};

}  // namespace gaf
