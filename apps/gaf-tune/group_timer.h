// One fused group measured in isolation: fixed inputs (the graph's constants where the group
// reads weights, seeded random values otherwise), a kernel compiled with given parameters (or by
// Halide's Mullapudi2016 autoscheduler), checked against the default schedule's outputs and
// timed as the median of repeats after a warm-up run. On the NPU tile model the kernel runs once
// under the simulator and its time is the modeled one (deterministic: no repeats).
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/group_kernel.h"

namespace gaf::tune {

struct Measurement {
  bool ok = false;                 // compiled, ran and matched the default outputs
  double ms = 0;                   // median over the timed runs; NPU: modeled (npu_modeled_time total)
  std::string problem;             // why not ok: compile error or the first mismatching element
  std::vector<std::string> tiles;  // NPU: the tiles the schedule chose
};

class GroupTimer {
 public:
  GroupTimer(const Graph& g, const FusionGroup& grp, uint32_t seed, int repeat);
  GroupTimer(const GroupTimer&) = delete;  // input_ptrs_ points into inputs_
  GroupTimer& operator=(const GroupTimer&) = delete;
  // The default-parameter kernel: its outputs become the expected outputs of every candidate.
  Measurement measure_default(const HostScheduleParams& defaults);
  Measurement measure(const HostScheduleParams& params, ScheduleSource source = ScheduleSource::Host);
  // `a` and `b` compiled once and timed alternately, `rounds` x repeat runs each, medians: the
  // honest comparison of a search's winner with the default (the winner's own median is the
  // least of many noisy ones, which flatters it).
  std::pair<double, double> confirm(const HostScheduleParams& a, const HostScheduleParams& b, int rounds);
  // The NPU tile model: the default tiles' outputs become the expected ones (GafError when even
  // the default cannot fit); a candidate whose overrides are illegal is not ok, with the reason.
  // The simulator's counts are deterministic, so one compile and one run model a candidate.
  Measurement model_npu_default(const NpuTarget& t);
  Measurement model_npu(const NpuTarget& t, const NpuScheduleParams& p);

 private:
  Measurement run(GroupKernel& k, bool check);
  Measurement run_npu(GroupKernel& k, const NpuTarget& t, bool check);
  Measurement compile_and_model(const NpuTarget& t, const NpuScheduleParams& p, bool check);
  // Empty when `outs` match the expected outputs (or, without `check`, become them).
  std::string check_or_keep(const std::vector<Tensor>& outs, bool check);
  std::vector<double> time_runs(GroupKernel& k, int runs);
  static std::vector<Tensor> output_buffers(const GroupKernel& k);

  const Graph& g_;
  const FusionGroup& grp_;
  int repeat_;
  std::vector<Tensor> inputs_;
  std::vector<const Tensor*> input_ptrs_;  // into inputs_, as GroupKernel::run takes them
  std::vector<Tensor> expected_;
};

}  // namespace gaf::tune
