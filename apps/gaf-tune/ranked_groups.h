// The start both of gaf-tune's searches share: the plan's distinct groups, each with its timer and
// default cost, heaviest first (default cost x groups sharing the signature), and the total weight
// the time budget is shared by (BudgetShares).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/gaf-tune/group_timer.h"
#include "apps/gaf-tune/search_loop.h"
#include "apps/gaf-tune/tuner.h"

namespace gaf::tune {

struct RankedGroups {
  std::map<std::string, DistinctGroup> distinct;
  std::vector<GroupResult> results;  // heaviest first; signature, label, groups, default set
  std::map<std::string, std::unique_ptr<GroupTimer>> timers;
  double weight_total = 0;  // sum of default cost x groups
};

// `set_default(timer, result)` measures (or models) the default and sets result.default_ms and
// best_ms (and whatever else the target reports). Stops early when `stop` is set. Timers run
// `repeat` timed runs per measurement.
RankedGroups rank_groups(const Graph& g, const FusionPlan& plan, const TuneOptions& opts, int repeat,
                         const std::atomic<bool>& stop,
                         const std::function<void(GroupTimer&, GroupResult&)>& set_default);

}  // namespace gaf::tune
