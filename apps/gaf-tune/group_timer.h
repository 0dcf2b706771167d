// One fused group measured in isolation: fixed inputs (the graph's constants where the group
// reads weights, seeded random values otherwise), a kernel compiled with given parameters (or by
// Halide's Mullapudi2016 autoscheduler), checked against the default schedule's outputs and
// timed as the median of repeats after a warm-up run.
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/group_kernel.h"

namespace gaf::tune {

struct Measurement {
  bool ok = false;        // compiled, ran and matched the default outputs
  double ms = 0;          // median over the timed runs
  std::string problem;    // why not ok: compile error or the first mismatching element
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

 private:
  Measurement run(GroupKernel& k, bool check);
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
