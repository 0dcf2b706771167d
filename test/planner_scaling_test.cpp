// The planner's local legality checks (a merge checked on the window of groups it reorders,
// fusion/planner/group_schedule.h) against the whole-graph reference (PlannerOptions::
// whole_graph_checks): the same plans on BERT and synthetic graphs; and long chains and wide
// fan-outs plan in linear-ish time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "engine/model_source.h"
#include "fusion/models/synthetic.h"
#include "fusion/planner/planner.h"
#include "planner_test_util.h"

using namespace gaf;
using gaf::testing::prepared;

namespace {

FusionPlan plan_with(Graph g, bool whole_graph) {
  PlannerOptions o;
  o.whole_graph_checks = whole_graph;
  return plan_fusion_rewriting(g, o, RuleRegistry::builtin());
}

void expect_same_plans(const Graph& g) {
  FusionPlan local = plan_with(g, false), whole = plan_with(g, true);
  ASSERT_EQ(local.groups.size(), whole.groups.size());
  for (size_t i = 0; i < local.groups.size(); ++i) {
    EXPECT_EQ(local.groups[i].nodes, whole.groups[i].nodes) << "group " << i;
    EXPECT_EQ(local.groups[i].rule_label(), whole.groups[i].rule_label()) << "group " << i;
    EXPECT_EQ(local.groups[i].kind, whole.groups[i].kind) << "group " << i;
  }
  ASSERT_EQ(local.refused.size(), whole.refused.size());
  for (size_t i = 0; i < local.refused.size(); ++i) {
    EXPECT_EQ(local.refused[i].code, whole.refused[i].code) << local.refused[i].message;
    EXPECT_EQ(local.refused[i].nodes, whole.refused[i].nodes) << local.refused[i].message;
  }
}

double seconds_to_plan(Graph g) {
  auto t0 = std::chrono::steady_clock::now();
  FusionPlan p = plan_fusion(g, PlannerOptions{}, RuleRegistry::builtin());
  EXPECT_GT(p.groups.size(), 0u);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(PlannerLocalChecks, SamePlansAsTheWholeGraphReferenceOnBert) {
  ReferenceExecutor folder;
  ModelOptions o;
  o.layers = 12;
  o.seq = 32;
  expect_same_plans(load_model("builtin:bert-base", o, folder).graph);
}

TEST(PlannerLocalChecks, SamePlansOnChainsAndFanOuts) {
  expect_same_plans(prepared(elementwise_chain_graph(300)));
  expect_same_plans(prepared(fanout_graph(200)));
}

TEST(PlannerLocalChecks, SamePlansWithATightGroupSizeAndPeakRefusals) {
  // Size limits leave many groups side by side, so merges reorder wider windows.
  Graph g = prepared(fanout_graph(120));
  PlannerOptions o;
  o.max_group_size = 5;
  FusionPlan local = plan_fusion(g, o, RuleRegistry::builtin());
  o.whole_graph_checks = true;
  FusionPlan whole = plan_fusion(g, o, RuleRegistry::builtin());
  ASSERT_EQ(local.groups.size(), whole.groups.size());
  for (size_t i = 0; i < local.groups.size(); ++i) EXPECT_EQ(local.groups[i].nodes, whole.groups[i].nodes);
}

// A bound on the planner's complexity, not a speed measurement (bench/planner_bench measures):
// quadratic bookkeeping took minutes at these sizes.
TEST(PlannerScaling, LongChainsAndWideFanOutsPlanInSeconds) {
  EXPECT_LT(seconds_to_plan(prepared(elementwise_chain_graph(20000))), 20.0);
  EXPECT_LT(seconds_to_plan(prepared(fanout_graph(20000))), 20.0);
}

// Planning reads shapes, not weights (#31): the built-in model's weights are deferred tensors
// (Tensor::deferred), and loading, the rewrites (the horizontal MatMul's concatenated weights are
// deferred too) and planning make none of them; running makes them, the same every time.
TEST(PlannerScaling, PlanningMakesNoWeights) {
  ReferenceExecutor folder;
  ModelOptions o;
  o.layers = 3;
  o.seq = 16;
  Graph g = load_model("builtin:bert-base", o, folder).graph;
  FusionPlan p = plan_fusion_rewriting(g, PlannerOptions{}, RuleRegistry::builtin());
  EXPECT_FALSE(p.rewrites.empty()) << "the horizontal MatMul rewrite did not apply";
  int weights = 0;
  for (const auto& [name, v] : g.values()) {
    if (!v.constant || v.constant->numel() < 768) continue;  // scalars and shape tensors are made
    ++weights;
    EXPECT_FALSE(v.constant->materialized()) << name;
  }
  EXPECT_GE(weights, 3 * 12);
  // Made on first read, the same in another load.
  Graph again = load_model("builtin:bert-base", o, folder).graph;
  plan_fusion_rewriting(again, PlannerOptions{}, RuleRegistry::builtin());
  for (const auto& [name, v] : g.values())
    if (v.constant && v.constant->numel() >= 768) {
      const Tensor& a = *v.constant;
      const Tensor& b = *again.value(name).constant;
      ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << name;
      EXPECT_TRUE(a.materialized()) << name;
    }
}
