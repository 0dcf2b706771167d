// The public custom-rule API (generators/custom_rules.h) with a user-defined op: planning,
// priority over the built-in rules, running with and without a generate step, and the errors a
// wrong generate step gets.
#include <gtest/gtest.h>

#include "fusion/ir/builder.h"
#include "fusion/ops/op_builder.h"
#include "fusion/planner/planner.h"
#include "generators/custom_rules.h"
#include "generators/executable.h"
#include "tensor_compare.h"

namespace gaf {
namespace {

using Halide::Expr;
using Halide::Var;

// The user's op: y = 2x + 1, elementwise. Registered once, before any graph is built.
void register_custom_scale() {
  static const bool done = [] {
    OpSchema s;
    s.name = "CustomScale";
    s.op_class = OpClass::Elementwise;
    s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}}; };
    s.build = [](BuildContext& b) {
      std::vector<Var> v = b.vars(b.in(0).rank());
      b.define_output(0, v, b.in(0)(v)*2.0f + 1.0f);
    };
    OpRegistry::global().add(std::move(s));
    return true;
  }();
  (void)done;
}

const Pattern kScaleRelu = Pattern("CustomScale") >> Pattern("Relu");

// x[4,16] -> CustomScale -> Relu (-> Neg when `tail`) -> y
Graph scale_relu_graph(bool tail = false) {
  register_custom_scale();
  GraphBuilder b("custom");
  ValueRef y = b.relu(b.op1("CustomScale", {b.input("x", DType::Float32, {4, 16})}));
  if (tail) y = b.op1("Neg", {y});
  b.output(y, "y");
  Graph g = b.finish();
  infer_shapes(g);
  return g;
}

TensorMap inputs() {
  Tensor x(DType::Float32, {4, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 13) * 0.5f - 3.0f;
  return {{"x", x}};
}

// Runs the plan fused and checks it against the unfused reference.
void expect_matches_reference(const Graph& g, const FusionPlan& plan) {
  Executable fused = build_executable(g, plan);
  TensorMap got = fused.runner->run(inputs());
  ReferenceExecutor ref;
  TensorMap want = ref.run(g, inputs());
  EXPECT_EQ(testing::compare_tensors(got.at("y"), want.at("y")), "");
}

// The generate step of the seed's example: the whole group as one expression, max(2x+1, 0).
int fused_calls = 0;
std::vector<TensorFunc> scale_relu_fused(const std::vector<TensorFunc>& in, const Graph&, const FusionGroup&) {
  ++fused_calls;
  const TensorFunc& x = in.at(0);
  return {define_tensor("scale_relu", x.dtype, x.shape,
                        [&](const std::vector<Var>& v) { return Halide::max(x(v) * 2.0f + 1.0f, 0.0f); })};
}

TEST(CustomRule, FormsOneCustomGroupAndRunsWithTheDefaultAlgorithm) {
  Graph g = scale_relu_graph();
  RuleRegistry rules = RuleRegistry::builtin();
  register_fusion_rule(rules, "scale_relu", kScaleRelu);
  FusionPlan plan = plan_fusion(g, {}, rules);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, FusionKind::Custom);
  EXPECT_EQ(plan.groups[0].rule, "scale_relu");
  EXPECT_EQ(plan.groups[0].nodes, (std::vector<int>{0, 1}));
  expect_matches_reference(g, plan);
}

TEST(CustomRule, WinsOverTheElementwiseChainRuleAndCanBeDisabledByName) {
  Graph g = scale_relu_graph();
  RuleRegistry rules = RuleRegistry::builtin();
  register_fusion_rule(rules, "scale_relu", kScaleRelu);
  EXPECT_EQ(rules.ordered().front()->name(), "scale_relu");
  EXPECT_EQ(plan_fusion(g, {}, rules).groups.at(0).rule, "scale_relu");
  EXPECT_EQ(plan_fusion(g, {}, RuleRegistry::builtin()).groups.at(0).rule, "elementwise_chain");
  PlannerOptions off;
  off.apply_controls("disable-rule=scale_relu", rules);
  FusionPlan plan = plan_fusion(g, off, rules);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, FusionKind::Elementwise);
}

TEST(CustomRule, RegisteringANameTwiceIsRefused) {
  RuleRegistry rules = RuleRegistry::builtin();
  register_fusion_rule(rules, "scale_relu", kScaleRelu);
  EXPECT_THROW(register_fusion_rule(rules, "scale_relu", kScaleRelu), GafError);
  EXPECT_THROW(register_fusion_rule(rules, "elementwise_chain", kScaleRelu), GafError);
}

TEST(CustomRule, GenerateStepComputesTheGroup) {
  Graph g = scale_relu_graph();
  RuleRegistry rules = RuleRegistry::builtin();
  register_fusion_rule(rules, "scale_relu_fused", kScaleRelu, scale_relu_fused);
  FusionPlan plan = plan_fusion(g, {}, rules);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].rule, "scale_relu_fused");
  fused_calls = 0;
  expect_matches_reference(g, plan);
  EXPECT_EQ(fused_calls, 1);
}

// A generate step computes exactly the matched nodes, so generic grouping leaves its group alone;
// without one the group may grow like any other.
TEST(CustomRule, GroupsWithAGenerateStepAreNotGrownByGenericGrouping) {
  Graph g = scale_relu_graph(/*tail=*/true);
  RuleRegistry with_gen = RuleRegistry::builtin();
  register_fusion_rule(with_gen, "scale_relu_fused", kScaleRelu, scale_relu_fused);
  FusionPlan plan = plan_fusion(g, {}, with_gen);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].nodes.size(), 2u);
  expect_matches_reference(g, plan);

  RuleRegistry without = RuleRegistry::builtin();
  register_fusion_rule(without, "scale_relu", kScaleRelu);
  FusionPlan grown = plan_fusion(g, {}, without);
  ASSERT_EQ(grown.groups.size(), 1u);
  EXPECT_EQ(grown.groups[0].rule, "scale_relu");
  EXPECT_TRUE(grown.groups[0].grown);
  EXPECT_EQ(grown.groups[0].rule_label(), "scale_relu+generic");
}

// The error a generate step gets, thrown when the kernels are compiled (before anything runs).
std::string generate_error(const std::string& rule, GenerateFn fn) {
  Graph g = scale_relu_graph();
  RuleRegistry rules = RuleRegistry::builtin();
  register_fusion_rule(rules, rule, kScaleRelu, std::move(fn));
  FusionPlan plan = plan_fusion(g, {}, rules);
  try {
    Executable ex = build_executable(g, plan);
  } catch (const GafError& e) {
    return e.what();
  }
  return "no error";
}

void expect_clear_error(const std::string& e, const std::string& rule, const std::string& what) {
  EXPECT_NE(e.find("custom rule '" + rule + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("Relu"), std::string::npos) << e;  // the node computing the output
  EXPECT_NE(e.find(what), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(CustomRule, WrongShapeDtypeOrCountFromGenerateIsAClearError) {
  auto wrong_shape = [](const std::vector<TensorFunc>& in, const Graph&, const FusionGroup&) {
    return std::vector<TensorFunc>{define_tensor("bad", DType::Float32, {16}, [&](const std::vector<Var>& v) {
      return in[0]({Expr(0), v[0]});
    })};
  };
  expect_clear_error(generate_error("bad_shape", wrong_shape), "bad_shape", "has shape [16], the graph says [4,16]");

  auto wrong_dtype = [](const std::vector<TensorFunc>& in, const Graph&, const FusionGroup&) {
    return std::vector<TensorFunc>{
        define_tensor("bad", DType::Int64, in[0].shape, [&](const std::vector<Var>& v) { return in[0](v); })};
  };
  expect_clear_error(generate_error("bad_dtype", wrong_dtype), "bad_dtype", "has dtype int64");

  auto wrong_dims = [](const std::vector<TensorFunc>& in, const Graph&, const FusionGroup&) {
    TensorFunc t = define_tensor("bad", DType::Float32, {16}, [&](const std::vector<Var>& v) {
      return in[0]({Expr(0), v[0]});
    });
    t.shape = in[0].shape;  // claims rank 2, defines 1 dimension
    return std::vector<TensorFunc>{t};
  };
  expect_clear_error(generate_error("bad_dims", wrong_dims), "bad_dims", "Func of 1 dimensions");

  auto none = [](const std::vector<TensorFunc>&, const Graph&, const FusionGroup&) {
    return std::vector<TensorFunc>{};
  };
  expect_clear_error(generate_error("bad_count", none), "bad_count", "returned 0 outputs");
}

}  // namespace
}  // namespace gaf
