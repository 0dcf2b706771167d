// gaf-tune's guard behind "fused never slower than unfused" (#38): the plan's groups timed fused
// and with their members apart, in one process on the same inputs (generators/plan_profiler.h);
// a group that loses is marked in the schedule database (TunedSchedule::apart_ms), so gaf run and
// gaf compile with that database plan its nodes apart (GAF-NF030). The opt-in `gaf run
// --check-fusion` measures the same for one run; this makes it last.
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/reference_executor.h"  // TensorMap
#include "schedules/schedule_db.h"

namespace gaf::tune {

struct GuardedGroup {
  int group = 0;      // FusionPlan group id
  std::string label;  // FusionGroup::rule_label
  double fused_ms = 0, apart_ms = 0;
  bool apart = false;  // measured slower fused: marked to run apart
};

// Times every group of `plan` (on graph `g`, the kernel graph) fused with `db`'s parameters and
// apart (median of `runs`), marks the groups that lose in `db` for this machine and clears the
// mark of those that no longer do. Returns every group of two or more nodes, in plan order.
std::vector<GuardedGroup> guard_fusion(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, int runs,
                                       ScheduleDb& db);

}  // namespace gaf::tune
