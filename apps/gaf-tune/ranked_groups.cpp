#include "apps/gaf-tune/ranked_groups.h"

#include <algorithm>

#include "fusion/report/report.h"

namespace gaf::tune {

RankedGroups rank_groups(const Graph& g, const FusionPlan& plan, const TuneOptions& opts, int repeat,
                         const std::atomic<bool>& stop,
                         const std::function<void(GroupTimer&, GroupResult&)>& set_default) {
  RankedGroups rg;
  for (const std::string& sig : distinct_groups(plan, opts.only_signature, rg.distinct)) {
    if (stop) break;
    const DistinctGroup& d = rg.distinct.at(sig);
    GroupResult r;
    r.signature = sig;
    r.label = d.group->kernel.label;
    r.groups = d.count;
    auto timer = std::make_unique<GroupTimer>(g, *d.group, opts.seed, repeat);
    set_default(*timer, r);
    rg.timers[sig] = std::move(timer);
    rg.results.push_back(r);
  }
  std::stable_sort(rg.results.begin(), rg.results.end(), [](const GroupResult& a, const GroupResult& b) {
    return a.default_ms * a.groups > b.default_ms * b.groups;
  });
  for (const GroupResult& r : rg.results) rg.weight_total += r.default_ms * r.groups;
  return rg;
}

}  // namespace gaf::tune
