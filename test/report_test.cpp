// The pieces behind report and verify, in process: repeated-block detection, HTML escaping of
// node names, DOT folding, tensor comparison (abs, rel, ULPs, NaN), and verify_groups on BERT.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_source.h"
#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "fusion/report/html_report.h"
#include "fusion/report/repeats.h"
#include "fusion/report/report.h"
#include "generators/group_verifier.h"

using namespace gaf;

namespace {

FusionPlan plan_of_signatures(const std::string& sigs) {
  FusionPlan p;
  for (char c : sigs) {
    FusionGroup g;
    g.id = static_cast<int>(p.groups.size());
    g.signature = std::string(1, c);
    p.groups.push_back(g);
  }
  return p;
}

ReferenceExecutor& reference() {
  static ReferenceExecutor ref;
  return ref;
}

// The built-in BERT at seq 8, planned (the planner's rewrites applied to m.graph).
std::pair<LoadedModel, FusionPlan> planned_bert(int layers) {
  ModelOptions o;
  o.layers = layers;
  o.seq = 8;
  LoadedModel m = load_model("builtin:bert-base", o, reference());
  FusionPlan plan = plan_fusion_rewriting(m.graph, {}, RuleRegistry::builtin());
  return {std::move(m), std::move(plan)};
}

Tensor floats(std::vector<double> v) {
  return Tensor::from_values(DType::Float32, {static_cast<int64_t>(v.size())}, v);
}

}  // namespace

TEST(Repeats, LongestRunOfIdenticalBlocks) {
  RepeatedBlock b = find_repeated_block(plan_of_signatures("xabcabcabcy"));
  EXPECT_EQ(b.first, 1u);
  EXPECT_EQ(b.period, 3u);
  EXPECT_EQ(b.count, 3u);
  EXPECT_FALSE(b.folded(3));
  EXPECT_TRUE(b.folded(4));
  EXPECT_TRUE(b.folded(9));
  EXPECT_FALSE(b.folded(10));
  EXPECT_FALSE(find_repeated_block(plan_of_signatures("abcdefg")).repeats());
  // Blocks of one group are not layers.
  EXPECT_FALSE(find_repeated_block(plan_of_signatures("aaa")).repeats());
}

TEST(HtmlReport, NodeNamesAreEscapedAndProfileIsShown) {
  GraphBuilder b("esc");
  auto x = b.input("x<script>", DType::Float32, {4});
  auto y = b.relu(b.add(x, x));
  b.output(y, "y&z");
  Graph g = b.finish();
  prepare_graph(g, {},
                [&](const Node& n, const std::vector<const Tensor*>& in, const std::vector<const TensorDesc*>& t) {
                  return reference().run_node(n, in, t);
                });
  FusionPlan plan = plan_fusion(g);
  ASSERT_EQ(plan.groups.size(), 1u);
  PlanProfile prof;
  prof.runs = 1;
  prof.groups = {{0.5, 2.0}};
  std::string html = fusion_html_report(g, plan, {"model <m>", "", "no dot here", &prof});
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("model &lt;m&gt;"), std::string::npos);
  EXPECT_NE(html.find("no dot here"), std::string::npos);
  EXPECT_NE(html.find("1.500 ms"), std::string::npos);  // saved = 2.0 - 0.5
}

TEST(Dot, FoldsRepeatedLayersIntoOneBox) {
  auto [m, plan] = planned_bert(3);
  std::string full = fusion_plan_dot(m.graph, plan), folded = fusion_plan_dot(m.graph, plan, DotOptions{true});
  auto count = [](const std::string& s, const std::string& n) {
    size_t k = 0;
    for (size_t at = s.find(n); at != std::string::npos; at = s.find(n, at + 1)) ++k;
    return k;
  };
  size_t fused_groups = 0;
  for (const FusionGroup& grp : plan.groups) fused_groups += grp.nodes.size() >= 2;
  EXPECT_EQ(count(full, "subgraph cluster_g"), fused_groups);
  EXPECT_EQ(fused_groups, 1u + 3u * 5u);  // the mask, then per layer 5
  EXPECT_EQ(count(folded, "subgraph cluster_g"), 6u);
  EXPECT_NE(folded.find("x2 identical layers"), std::string::npos);
  EXPECT_LT(folded.size() * 2, full.size());
}

TEST(CompareTensors, AbsRelUlpsAndNaN) {
  Tolerance tol{1e-4, 1e-5};
  TensorError same = compare_tensors("t", floats({1, 2, 3}), floats({1, 2, 3}), tol);
  EXPECT_TRUE(same.ok());
  EXPECT_EQ(same.max_ulps, 0);
  float one_up = std::nextafter(1.0f, 2.0f);
  TensorError ulp = compare_tensors("t", floats({one_up, 2}), floats({1, 2}), tol);
  EXPECT_EQ(ulp.max_ulps, 1);
  EXPECT_TRUE(ulp.ok());
  TensorError far = compare_tensors("t", floats({1.01, 2, 0}), floats({1, 2, 0}), tol);
  EXPECT_FALSE(far.ok());
  EXPECT_EQ(far.outside, 1);
  EXPECT_NEAR(far.max_abs, 0.01, 1e-6);
  EXPECT_NEAR(far.max_rel, 0.01, 1e-6);
  TensorError nan = compare_tensors("t", floats({NAN, 1}), floats({1, 1}), tol);
  EXPECT_FALSE(nan.ok());
  EXPECT_TRUE(compare_tensors("t", floats({NAN}), floats({NAN}), tol).ok());
  Tensor ints = Tensor::from_values(DType::Int64, {2}, std::vector<double>{1, 2});
  EXPECT_EQ(compare_tensors("i", ints, ints, tol).max_ulps, -1);
  EXPECT_THROW(compare_tensors("t", floats({1}), floats({1, 2}), tol), GafError);
}

TEST(VerifyGroups, EachGroupOnReferenceInputsMatches) {
  auto [m, plan] = planned_bert(1);
  ReferenceExecutor& ref = reference();
  Executable fused = build_executable(m.graph, plan);
  size_t progress = 0;
  std::vector<GroupCheck> checks = verify_groups(m.graph, plan, *fused.runner, ref, make_default_inputs(m.graph, 1), {},
                                                 [&](size_t done, const FusionGroup&) { progress = done; });
  ASSERT_EQ(checks.size(), plan.groups.size());
  EXPECT_EQ(progress, plan.groups.size());
  for (const GroupCheck& c : checks) {
    EXPECT_TRUE(c.error.ok()) << "g" << c.group << " " << c.error.value << " max_abs " << c.error.max_abs;
    EXPECT_GT(c.error.elements, 0);
  }
}
