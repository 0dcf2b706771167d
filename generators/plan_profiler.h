// Measures each group of a plan fused (one kernel) and unfused (each member op its own kernel,
// same graph, same inputs) in the same process, so "what did this fusion buy" has a figure.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusion/planner/plan_profile.h"
#include "generators/executable.h"

namespace gaf {

struct ProfileProgress {
  CompileProgress compile_fused, compile_unfused;
};

// Median forward time and median time of each plan group (indexed by group id) over `runs`
// profiled runs of `ex` after one warm-up run (one group's time in one run is noisy).
std::pair<double, std::vector<double>> time_groups(PlanRunner& ex, size_t groups, const TensorMap& inputs, int runs);

// `g` is the graph the plan was made for (after the planner's rewrites). One warm-up run of each
// executable, then `runs` timed runs of each, fused and unfused in turn; per-group times are medians.
// The fused kernels use `schedules`' tuned parameters when given (the unfused ones too, where
// a single-node group is in it).
PlanProfile profile_plan(const Graph& g, const FusionPlan& plan, const TensorMap& inputs, int runs,
                         const ProfileProgress& progress = {}, const ScheduleDb* schedules = nullptr);

// The guard behind "fused never slower than unfused": the groups of `plan` (two or more nodes)
// that `p` measured slower fused than their members apart, by more than `margin` of the apart
// time and `min_ms` (noise on small groups refuses nothing), and in their fastest fused run too.
// Each of their nodes' names -> the sentence its GAF-NF030 refusal gives
// (PlannerOptions::keep_apart); empty when fusion paid.
std::map<std::string, std::string> groups_slower_fused(const Graph& g, const FusionPlan& plan, const PlanProfile& p,
                                                       double margin = 0.05, double min_ms = 0.02);

}  // namespace gaf
