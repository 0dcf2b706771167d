#include "generators/plan_profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "fusion/planner/planner.h"

namespace gaf {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

std::pair<double, std::vector<double>> time_groups(PlanRunner& ex, size_t groups, const TensorMap& inputs, int runs) {
  ex.set_profiling(true);
  TensorMap outs;  // reused by every run, as a caller of run() keeps its outputs
  ex.run(inputs, outs);
  std::vector<double> forward;
  std::vector<std::vector<double>> per(groups);
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ex.run(inputs, outs);
    forward.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t k = 0; k < groups; ++k) per[k].push_back(ex.group_ms()[k]);
  }
  std::vector<double> med;
  for (auto& v : per) med.push_back(median(v));
  return {median(forward), med};
}

PlanProfile profile_plan(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, int runs,
                         const ProfileProgress& progress, const ScheduleDb* schedules) {
  PlannerOptions off;
  off.enabled = false;
  FusionPlan single = plan_fusion(g, off);
  Executable fused = build_executable(g, plan, "gaf", {schedules, nullptr, progress.compile_fused});
  Executable unfused = build_executable(g, single, "gaf", {schedules, nullptr, progress.compile_unfused});
  PlanProfile p;
  p.runs = runs;
  auto [fused_fwd, fused_ms] = time_groups(*fused.runner, plan.groups.size(), inputs, runs);
  auto [unfused_fwd, node_ms] = time_groups(*unfused.runner, single.groups.size(), inputs, runs);
  p.fused_forward_ms = fused_fwd;
  p.unfused_forward_ms = unfused_fwd;
  for (const FusionGroup& grp : plan.groups) {
    GroupTiming t;
    t.fused_ms = fused_ms[grp.id];
    for (int n : grp.nodes) t.unfused_ms += node_ms[single.group_of_node[n]];
    p.groups.push_back(t);
  }
  return p;
}

std::map<std::string, std::string> groups_slower_fused(const Graph& g, const FusionPlan& plan, const PlanProfile& p,
                                                       double margin, double min_ms) {
  std::map<std::string, std::string> apart;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2 || static_cast<size_t>(grp.id) >= p.groups.size()) continue;
    const GroupTiming& t = p.groups[static_cast<size_t>(grp.id)];
    if (t.fused_ms <= t.unfused_ms * (1 + margin) || t.fused_ms - t.unfused_ms <= min_ms) continue;
    char why[200];
    std::snprintf(why, sizeof why,
                  "was in group g%d (%s), which took %.3f ms fused against %.3f ms for its %zu nodes apart", grp.id,
                  grp.rule_label().c_str(), t.fused_ms, t.unfused_ms, grp.nodes.size());
    for (int n : grp.nodes) apart[g.nodes()[static_cast<size_t>(n)].name] = why;
  }
  return apart;
}

}  // namespace gaf
