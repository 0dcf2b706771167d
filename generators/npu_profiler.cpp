#include "generators/npu_profiler.h"

#include <algorithm>
#include <cmath>

#include "fusion/planner/planner.h"
#include "fusion/planner/group_info.h"
#include "generators/comm_kernel.h"

namespace gaf {

namespace {

void add_pipes(NpuModeledTime& sum, const NpuModeledTime& t) {
  sum.dma_in_us += t.dma_in_us;
  sum.dma_out_us += t.dma_out_us;
  sum.cube_us += t.cube_us;
  sum.vector_us += t.vector_us;
  sum.launch_us += t.launch_us;
  sum.link_us += t.link_us;
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

// The NPU model runs one rank's kernels on the host; its collectives are modeled, not run. This
// stand-in gives the comm kernels their ranks (rank 0 of `size`) and moves no data: a reduce-
// scatter keeps this rank's own partial block, so outputs are not those of a real job.
class StandInRanks : public Communicator {
 public:
  explicit StandInRanks(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void all_reduce_sum(float*, int64_t, const std::string&) override {}
  void reduce_scatter_sum(const float* send, float* recv, int64_t block, const std::string&) override {
    std::copy(send, send + block, recv);
  }
  void all_gather(void*, int64_t, const std::string&) override {}
  void check_same(uint64_t, const std::string&) override {}
  void barrier(const std::string&) override {}

 private:
  int size_;
};

// What a group's collectives send over one rank's link, ring algorithm over P ranks: an
// all-reduce of B bytes sends 2(P-1)/P B in 2(P-1) steps; a reduce-scatter, or an all-gather,
// of B bytes in all (P-1)/P B in P-1 steps. A comm_compute group is a reduce-scatter of the
// partial sums and an all-gather of each output; a collective alone is itself.
NpuCounts link_counts(const Graph& g, const FusionGroup& grp) {
  NpuCounts c;
  auto ring = [&c](int64_t bytes, int64_t p, int64_t passes) {
    c.link_bytes += passes * bytes * (p - 1) / p;
    c.link_steps += passes * (p - 1);
  };
  const bool fused = grp.nodes.size() > 1 && needs_communicator(g, grp);
  for (int n : grp.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    if (!is_collective(node)) continue;
    const int64_t p = node.attrs.get_int("group_size", 1);
    if (p < 2) continue;
    if (fused) {
      ring(value_bytes(g, node.inputs[0]), p, 1);
      for (const std::string& o : grp.outputs) ring(value_bytes(g, o), p, 1);
    } else if (node.op_type == "AllReduce") {
      ring(value_bytes(g, node.inputs[0]), p, 2);
    } else {
      ring(value_bytes(g, node.outputs[0]), p, 1);
    }
  }
  return c;
}

// The ranks the graph's collectives span (1 when it has none).
int collective_ranks(const Graph& g) {
  int64_t p = 1;
  for (const Node& n : g.nodes())
    if (is_collective(n)) p = std::max(p, n.attrs.get_int("group_size", 1));
  return static_cast<int>(p);
}

}  // namespace

NpuPlanModel model_plan_on_npu(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, const NpuTarget& target,
                               const ProfileProgress& progress, const ScheduleDb* schedules) {
  PlannerOptions off;
  off.enabled = false;
  FusionPlan single = plan_fusion(g, off);
  const int ranks = collective_ranks(g);
  if (ranks > 1 && target.link_bandwidth_gbps <= 0)
    throw GafError("NPU target '" + target.name + "' (" + target.file +
                   ") describes no interconnect (link_bandwidth_gbps, link_latency_us) for the graph's collectives");
  StandInRanks stand_in(ranks);
  Communicator* comm = ranks > 1 ? &stand_in : nullptr;
  Executable fused = build_executable(g, plan, "gaf", {schedules, &target, progress.compile_fused, comm});
  Executable unfused = build_executable(g, single, "gaf", {schedules, &target, progress.compile_unfused, comm});
  TensorMap fused_out = fused.runner->run(inputs), unfused_out = unfused.runner->run(inputs);

  NpuPlanModel m;
  m.target = target;
  m.ranks = ranks;
  if (ranks == 1) m.max_abs_diff = max_abs_diff(fused_out, unfused_out);
  m.tuned_groups = fused.stats.tuned_groups;
  std::vector<double> node_us(single.groups.size());
  for (size_t s = 0; s < single.groups.size(); ++s) {
    NpuCounts c = unfused.runner->npu_counts().at(s);
    c += link_counts(g, single.groups[s]);
    NpuModeledTime t = npu_modeled_time(c, target);
    node_us[s] = t.total_us;
    m.unfused += c;
    add_pipes(m.unfused_pipes, t);
  }
  for (const FusionGroup& grp : plan.groups) {
    NpuGroupModel gm;
    gm.fused = fused.runner->npu_counts().at(grp.id);
    gm.fused += link_counts(g, grp);
    NpuModeledTime t = npu_modeled_time(gm.fused, target);
    gm.fused_us = t.total_us;
    gm.tiles = fused.npu_tiles(grp.id);
    for (int n : grp.nodes) {
      size_t s = single.group_of_node[n];
      gm.unfused += unfused.runner->npu_counts().at(s);
      gm.unfused += link_counts(g, single.groups[s]);
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
