#include "apps/gaf-tune/fusion_guard.h"

#include <set>

#include "apps/gaf-tune/search_loop.h"
#include "fusion/report/report.h"
#include "generators/plan_profiler.h"
#include "schedules/host_target.h"

namespace gaf::tune {

std::vector<GuardedGroup> guard_fusion(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, int runs,
                                       ScheduleDb& db) {
  const PlanProfile prof = profile_plan(g, plan, inputs, runs, {}, &db);
  // The same margins as gaf run --check-fusion: noise on a small group marks nothing.
  const std::map<std::string, std::string> slower = groups_slower_fused(g, plan, prof);
  const std::string machine = host_machine_key();
  const HostScheduleParams defaults = host_params_for(host_target());
  std::vector<GuardedGroup> out;
  std::set<std::string> done;  // one entry per signature: groups sharing it share the kernel
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    const GroupTiming& t = prof.groups.at(static_cast<size_t>(grp.id));
    GuardedGroup r{grp.id, grp.kernel.label, t.fused_ms, t.unfused_ms,
                   slower.count(g.nodes()[static_cast<size_t>(grp.nodes.front())].name) > 0};
    out.push_back(r);
    if (!done.insert(grp.signature).second) continue;
    const TunedSchedule* old = db.find(grp.signature, "host", machine);
    if (!r.apart && (!old || !old->apart_ms)) continue;  // nothing to mark or clear
    TunedSchedule e;
    if (old) {
      e = *old;
    } else {  // not tuned: the default parameters, measured as they are
      e.signature = grp.signature;
      e.target = "host";
      e.machine = machine;
      e.label = r.label;
      e.matmul = defaults.matmul;
      e.rows = defaults.rows;
      e.default_ms = r.fused_ms;
    }
    e.best_ms = r.fused_ms;  // the fused time with these parameters, as the guard measured it
    e.apart_ms = r.apart ? std::optional<double>(r.apart_ms) : std::nullopt;
    e.date = today();
    db.put(e);
  }
  return out;
}

}  // namespace gaf::tune
