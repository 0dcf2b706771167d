#include "generators/npu_profiler.h"

#include <algorithm>
#include <cmath>

#include "fusion/planner/planner.h"

namespace gaf {

namespace {

void add_pipes(NpuModeledTime& sum, const NpuModeledTime& t) {
  sum.dma_in_us += t.dma_in_us;
  sum.dma_out_us += t.dma_out_us;
  sum.cube_us += t.cube_us;
  sum.vector_us += t.vector_us;
  sum.launch_us += t.launch_us;
  sum.total_us += t.total_us;
}

double max_abs_diff(const TensorMap& a, const TensorMap& b) {
  double m = 0;
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    if (t.dtype() != DType::Float32) continue;
    for (int64_t i = 0; i < t.numel(); ++i)
      m = std::max(m, static_cast<double>(std::fabs(t.data<float>()[i] - u.data<float>()[i])));
  }
  return m;
}

}  // namespace

NpuPlanModel model_plan_on_npu(const Graph& g, const FusionPlan& plan, const TensorMap& inputs,
                               const NpuTarget& target, const ProfileProgress& progress,
                               const ScheduleDb* schedules) {
  PlannerOptions off;
  off.enabled = false;
  FusionPlan single = plan_fusion(g, off);
  FusedExecutor fused(g, plan, {schedules, &target, progress.compile_fused});
  FusedExecutor unfused(g, single, {schedules, &target, progress.compile_unfused});
  TensorMap fused_out = fused.run(inputs), unfused_out = unfused.run(inputs);

  NpuPlanModel m;
  m.target = target;
  m.max_abs_diff = max_abs_diff(fused_out, unfused_out);
  m.tuned_groups = fused.stats().tuned_groups;
  std::vector<double> node_us(single.groups.size());
  for (size_t s = 0; s < single.groups.size(); ++s) {
    const NpuCounts& c = unfused.npu_counts().at(s);
    NpuModeledTime t = npu_modeled_time(c, target);
    node_us[s] = t.total_us;
    m.unfused += c;
    add_pipes(m.unfused_pipes, t);
  }
  for (const FusionGroup& grp : plan.groups) {
    NpuGroupModel gm;
    gm.fused = fused.npu_counts().at(grp.id);
    NpuModeledTime t = npu_modeled_time(gm.fused, target);
    gm.fused_us = t.total_us;
    gm.tiles = fused.npu_tiles(grp.id);
    for (int n : grp.nodes) {
      size_t s = single.group_of_node[n];
      gm.unfused += unfused.npu_counts().at(s);
      gm.unfused_us += node_us[s];
    }
    m.fused += gm.fused;
    add_pipes(m.fused_pipes, t);
    m.groups.push_back(std::move(gm));
  }
  m.fused_us = m.fused_pipes.total_us;
  m.unfused_us = m.unfused_pipes.total_us;
  return m;
}

}  // namespace gaf
