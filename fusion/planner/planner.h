// The fusion planner: rules first (by priority), then generic op-class grouping greedily by bytes
// of memory traffic saved, every merge checked for legality (reason codes for refusals), then a
// compute decision per member Func, predicted traffic per group and a signature per group.
#pragma once

#include <set>
#include <string>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "fusion/planner/rule.h"

namespace gaf {

struct PlannerOptions {
  bool enabled = true;                      // false: every node its own group (--no-fusion)
  std::set<FusionKind> disabled_kinds;
  std::set<std::string> disabled_rules;
  std::set<std::string> skip_nodes;         // node names or op types never fused
  int max_group_size = 64;                  // nodes per group (CANN and Inductor use 64)
  bool generic_grouping = true;
  // Generic grouping also merges where no traffic is saved (one launch fewer).
  bool fuse_for_launches = true;
  // Record op-class refusals (GAF-NF004) too; they are many and mostly obvious.
  bool report_class_refusals = true;
  // Refuse merges that raise the predicted peak memory (GAF-NF003, fusion/planner/peak_memory.h).
  bool check_peak_memory = true;

  // Parses a control string "no-fusion;disable-kind=a,b;disable-rule=r;skip=n1,Op;max-size=32"
  // (the GAF_FUSION environment variable uses it). Unknown kinds/rules/keys are GafErrors listing
  // the valid ones.
  void apply_controls(const std::string& spec, const RuleRegistry& rules);
  void validate(const RuleRegistry& rules) const;  // unknown rule names -> GafError
};

// Reason codes for refused merges (stable: tests, docs and users grep for them).
namespace reason {
constexpr const char* kCycle = "GAF-NF002";          // would create a cycle
constexpr const char* kPeakMemory = "GAF-NF003";     // would raise the predicted peak memory
constexpr const char* kClasses = "GAF-NF004";        // op classes cannot fuse this way
constexpr const char* kDuplicateWork = "GAF-NF005";  // would recompute expensive work
constexpr const char* kShapes = "GAF-NF006";         // incompatible shapes
constexpr const char* kNoFold = "GAF-NF007";         // BatchNormalization not foldable into its MatMul/Gemm
constexpr const char* kGroupSize = "GAF-NF010";      // group too large
constexpr const char* kSkipped = "GAF-NF020";        // node skipped by the user
}  // namespace reason
// One sentence per reason code (docs/USER_GUIDE.md has the same table); "" for an unknown code.
const char* reason_meaning(const std::string& code);

// The graph must be static and typed (after prepare_graph).
FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts, const RuleRegistry& rules);
FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts = {});
// The planner's graph rewrites first (FusionRule::rewrite of every enabled rule, by priority:
// BatchNormalization folded into its MatMul/Gemm, sibling MatMuls become one wide MatMul), then
// plan_fusion; the plan records the rewrites and the refused ones. `g` is changed.
FusionPlan plan_fusion_rewriting(Graph& g, const PlannerOptions& opts, const RuleRegistry& rules);

}  // namespace gaf
