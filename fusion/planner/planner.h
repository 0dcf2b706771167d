// The fusion planner: rules first (by priority), then generic op-class grouping greedily by bytes
// of memory traffic saved, every merge checked for legality (reason codes for refusals), then a
// compute decision per member Func, predicted traffic per group and a signature per group.
#pragma once

#include <map>
#include <set>
#include <string>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "fusion/planner/rule.h"

namespace gaf {

struct PlannerOptions {
  bool enabled = true;  // false: every node its own group (--no-fusion)
  std::set<FusionKind> disabled_kinds;
  std::set<std::string> disabled_rules;
  std::set<std::string> skip_nodes;  // node names or op types never fused
  // Nodes whose fused group measured slower than its members apart (gaf run --check-fusion),
  // each with the measurement as a sentence: never fused again, refused with GAF-NF030.
  std::map<std::string, std::string> keep_apart;
  int max_group_size = 64;  // nodes per group (CANN and Inductor use 64)
  bool generic_grouping = true;
  // Generic grouping also merges where no traffic is saved (one launch fewer).
  bool fuse_for_launches = true;
  // Record op-class refusals (GAF-NF004) too; they are many and mostly obvious.
  bool report_class_refusals = true;
  // Refuse merges that raise the predicted peak memory (GAF-NF003, fusion/planner/peak_memory.h).
  bool check_peak_memory = true;
  // Checks every merge against the whole graph (execution order and peak recomputed, the cycle
  // search unbounded) instead of the window of groups it reorders: the slow reference the
  // planner test compares plans with.
  bool whole_graph_checks = false;

  // Parses a control string "no-fusion;disable-kind=a,b;disable-rule=r;skip=n1,Op;max-size=32"
  // (the GAF_FUSION environment variable uses it). Unknown kinds/rules/keys are GafErrors listing
  // the valid ones.
  void apply_controls(const std::string& spec, const RuleRegistry& rules);
  void validate(const RuleRegistry& rules) const;  // unknown rule names -> GafError
  // Every skip name must name a node or an op type of `g` (GafError naming it otherwise).
  void check_skip_names(const Graph& g) const;
};

// Reason codes for refused merges, by the names tests and rules use.
namespace reason {
constexpr ReasonCode kCycle = ReasonCode::Cycle;
constexpr ReasonCode kPeakMemory = ReasonCode::PeakMemory;
constexpr ReasonCode kClasses = ReasonCode::Classes;
constexpr ReasonCode kDuplicateWork = ReasonCode::DuplicateWork;
constexpr ReasonCode kShapes = ReasonCode::Shapes;
constexpr ReasonCode kNoFold = ReasonCode::NoFold;
constexpr ReasonCode kGroupSize = ReasonCode::GroupSize;
constexpr ReasonCode kSkipped = ReasonCode::Skipped;
constexpr ReasonCode kMeasuredSlower = ReasonCode::MeasuredSlower;
}  // namespace reason

// The graph must be static and typed (after prepare_graph).
FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts, const RuleRegistry& rules);
FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts = {});
// The planner's graph rewrites first (FusionRule::rewrite of every enabled rule, by priority:
// BatchNormalization folded into its MatMul/Gemm, sibling MatMuls become one wide MatMul), then
// plan_fusion; the plan records the rewrites and the refused ones. `g` is changed.
FusionPlan plan_fusion_rewriting(Graph& g, const PlannerOptions& opts, const RuleRegistry& rules);

}  // namespace gaf
