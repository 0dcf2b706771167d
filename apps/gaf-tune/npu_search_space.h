// The NPU schedule parameters gaf-tune searches for one group (npu_params.h): grids built from
// the group's extents — cube tile sides in cube blocks doubling up to the MatMul's M and N, k
// panels among the divisors of K, rows per tile doubling up to the rows there are, chunks of a
// long row — each with 0 (the schedule's own choice). Legality (the tile fits the buffers) is
// the schedule's to decide: a candidate it refuses is rejected by the tuner.
#pragma once

#include <random>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "runtime/npu_target.h"
#include "schedules/npu_params.h"

namespace gaf::tune {

class NpuSearchSpace {
 public:
  NpuSearchSpace(const Graph& g, const FusionGroup& grp, const NpuTarget& t);

  NpuScheduleParams random(std::mt19937& rng) const;
  // Points one grid step away along one parameter.
  std::vector<NpuScheduleParams> neighbours(const NpuScheduleParams& p) const;
  size_t size() const { return m_.size() * n_.size() * k_l1_.size() * rows_.size() * chunk_.size(); }

 private:
  std::vector<int64_t> m_{0}, n_{0}, k_l1_{0}, rows_{0}, chunk_{0};
};

}  // namespace gaf::tune
