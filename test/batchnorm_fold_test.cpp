// BatchNormalization folded into the MatMul/Gemm/Conv before it (rule batchnorm_fold): the plan's
// structure when it applies (BN gone, one matmul_epilogue group), its refusals (GAF-NF007) when
// it does not, the rule switch, and the fused result against the unfolded reference
// (|fused - ref| <= 1e-5 * max(1, |ref|), fp32).
#include <gtest/gtest.h>

#include <algorithm>

#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "planner_test_util.h"

using namespace gaf;
using gaf::testing::filled;
using gaf::testing::prepared;

namespace {

// Per-channel BN parameters with a spread of values (var > 0).
struct BnParams {
  Tensor scale, bias, mean, var;
  explicit BnParams(int64_t c)
      : scale(filled({c}, 0.7f)), bias(filled({c}, -0.3f)), mean(filled({c}, 0.25f)), var(filled({c}, 0.4f)) {
    for (int64_t i = 0; i < c; ++i) {
      scale.data<float>()[i] *= (i % 2 ? -1.5f : 1.0f);
      var.data<float>()[i] += 0.3f * static_cast<float>(i % 3);
    }
  }
};

ValueRef batch_norm(GraphBuilder& b, ValueRef x, const BnParams& p, const std::string& prefix, bool const_mean = true) {
  Attributes a;
  a.set("epsilon", 1e-3f);
  ValueRef mean =
      const_mean ? b.weight(prefix + "_mean", p.mean) : b.input(prefix + "_mean", DType::Float32, {p.mean.shape()[0]});
  return b.op1("BatchNormalization",
               {x, b.weight(prefix + "_scale", p.scale), b.weight(prefix + "_b", p.bias), mean,
                b.weight(prefix + "_var", p.var)},
               a);
}

int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op_type == op; }));
}

int node_index(const Graph& g, const std::string& op) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].op_type == op) return static_cast<int>(i);
  throw std::runtime_error("no " + op + " node");
}

const RefusedMerge* refusal(const FusionPlan& p, const std::string& rule) {
  for (const RefusedMerge& r : p.refused)
    if (r.rule == rule) return &r;
  return nullptr;
}

// Inputs with values on both sides of BN's mean.
TensorMap inputs_for(const Graph& g) {
  TensorMap in;
  for (const std::string& name : g.inputs()) {
    Tensor t(DType::Float32, g.value(name).type.shape());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.05f * static_cast<float>((i * 37) % 41) - 0.9f;
    in[name] = t;
  }
  return in;
}

// Plans a copy with the rewrites, runs it fused, and compares with the reference run of `g`.
double fused_vs_reference(const Graph& g, Graph& rewritten, FusionPlan& plan, const PlannerOptions& o = {}) {
  rewritten = g;
  plan = plan_fusion_rewriting(rewritten, o, RuleRegistry::builtin());
  TensorMap in = inputs_for(g);
  Executable fused = build_executable(rewritten, plan);
  ReferenceExecutor ref;
  return max_rel_diff(fused.runner->run(in), ref.run(g, in));
}

// Gemm(x, W, C) -> BN -> Relu; `trans_b` W is [8, 16] else [16, 8]; C of shape `c_shape`.
Graph gemm_bn_relu(bool trans_b, const Shape& c_shape) {
  GraphBuilder b("gemm_bn");
  auto x = b.input("x", DType::Float32, {4, 16});
  Attributes a;
  a.set("transB", int64_t{trans_b ? 1 : 0});
  a.set("alpha", 0.5f);
  a.set("beta", 2.0f);
  auto w = b.weight("w", filled(trans_b ? Shape{8, 16} : Shape{16, 8}, -0.03f));
  auto y = b.op1("Gemm", {x, w, b.weight("c", filled(c_shape, 0.2f))}, a);
  b.output(b.relu(batch_norm(b, y, BnParams(8), "bn")), "out");
  return prepared(b.finish());
}

}  // namespace

TEST(BatchNormFold, GemmBnReluBecomesOneMatMulEpilogue) {
  // C per column, per row and per element: bias' keeps whatever rows C had.
  for (bool trans_b : {true, false})
    for (const Shape& c : {Shape{8}, Shape{4, 1}, Shape{4, 8}}) {
      SCOPED_TRACE("transB=" + std::to_string(trans_b) + " C" + shape_str(c));
      Graph g = gemm_bn_relu(trans_b, c);
      Graph rewritten;
      FusionPlan p;
      EXPECT_LE(fused_vs_reference(g, rewritten, p), 1e-5);
      EXPECT_EQ(count_op(rewritten, "BatchNormalization"), 0);
      ASSERT_EQ(p.rewrites.size(), 1u);
      const std::string bn = g.nodes()[node_index(g, "BatchNormalization")].name;
      const std::string gemm = g.nodes()[node_index(g, "Gemm")].name;
      EXPECT_EQ(p.rewrites[0], "Folded BatchNormalization '" + bn + "' into '" + gemm + "'");
      ASSERT_EQ(p.groups.size(), 1u) << "Gemm, bias add and Relu in one group";
      EXPECT_EQ(p.groups[0].kind, FusionKind::MatMulEpilogue);
      EXPECT_EQ(p.groups[0].rule, "matmul_epilogue");
      std::vector<std::string> ops;
      for (int n : p.groups[0].nodes) ops.push_back(rewritten.nodes()[n].op_type);
      EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "Add", "Relu"}));
      EXPECT_TRUE(p.refused.empty());
    }
}

// Conv (3x3, padded, with and without its bias) -> BN -> Relu: one Conv with the folded kernel
// and bias, grouped with its Relu.
TEST(BatchNormFold, ConvBnReluBecomesOneConv) {
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "Conv with B" : "Conv without B");
    GraphBuilder b("conv_bn");
    auto x = b.input("x", DType::Float32, {2, 3, 9, 9});
    Attributes a;
    a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    std::vector<ValueRef> in{x, b.weight("w", filled({6, 3, 3, 3}, -0.05f))};
    if (with_bias) in.push_back(b.weight("cb", filled({6}, 0.1f)));
    auto y = b.op1("Conv", in, a);
    b.output(b.relu(batch_norm(b, y, BnParams(6), "bn")), "out");
    Graph g = prepared(b.finish());
    Graph rewritten;
    FusionPlan p;
    EXPECT_LE(fused_vs_reference(g, rewritten, p), 1e-5);
    EXPECT_EQ(count_op(rewritten, "BatchNormalization"), 0);
    EXPECT_EQ(count_op(rewritten, "Add"), 0) << "the folded bias is the Conv's own";
    ASSERT_EQ(p.rewrites.size(), 1u);
    ASSERT_EQ(p.groups.size(), 1u) << "Conv and Relu in one group";
  }
}

TEST(BatchNormFold, MatMulBn) {
  GraphBuilder b("matmul_bn");
  auto x = b.input("x", DType::Float32, {6, 16});
  auto y = b.matmul(x, b.weight("w", filled({16, 12}, -0.04f)));
  b.output(batch_norm(b, y, BnParams(12), "bn"), "out");
  Graph g = prepared(b.finish());
  Graph rewritten;
  FusionPlan p;
  EXPECT_LE(fused_vs_reference(g, rewritten, p), 1e-5);
  EXPECT_EQ(count_op(rewritten, "BatchNormalization"), 0);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].kind, FusionKind::MatMulEpilogue);
  EXPECT_EQ(p.groups[0].nodes.size(), 2u) << "MatMul + bias add";
  // The graph output keeps its name; the original weight is replaced, not kept beside the folded one.
  EXPECT_EQ(rewritten.outputs(), g.outputs());
  EXPECT_FALSE(rewritten.has_value("w"));
}

TEST(BatchNormFold, RefusalsNameBothNodesAndBnStaysNormalization) {
  struct Case {
    const char* what;
    std::function<Graph()> build;
    const char* why;  // part of the refusal sentence
  };
  std::vector<Case> cases = {
      {"statistics not constant",
       [] {
         GraphBuilder b("stats");
         auto x = b.input("x", DType::Float32, {4, 16});
         auto y = b.matmul(x, b.weight("w", filled({16, 8}, 0.1f)));
         b.output(batch_norm(b, y, BnParams(8), "bn", /*const_mean=*/false), "out");
         return prepared(b.finish());
       },
       "input_mean 'bn_mean' is not a constant"},
      {"MatMul output read twice",
       [] {
         GraphBuilder b("fanout");
         auto x = b.input("x", DType::Float32, {4, 16});
         auto y = b.matmul(x, b.weight("w", filled({16, 8}, 0.1f)));
         b.output(batch_norm(b, y, BnParams(8), "bn"), "out");
         b.output(b.relu(y), "other");
         return prepared(b.finish());
       },
       "is also read by"},
      {"3-D [B, S, C]: channel axis 1 is S, not the column",
       [] {
         GraphBuilder b("seq");
         auto x = b.input("x", DType::Float32, {2, 5, 16});
         auto y = b.matmul(x, b.weight("w", filled({16, 8}, 0.1f)));
         b.output(batch_norm(b, y, BnParams(5), "bn"), "out");
         return prepared(b.finish());
       },
       "normalises over axis 1 of"},
      {"4-D NCHW-like",
       [] {
         GraphBuilder b("nchw");
         auto x = b.input("x", DType::Float32, {2, 3, 4, 16});
         auto y = b.matmul(x, b.weight("w", filled({16, 8}, 0.1f)));
         b.output(batch_norm(b, y, BnParams(3), "bn"), "out");
         return prepared(b.finish());
       },
       "weight columns are axis 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g = c.build();
    Graph rewritten;
    FusionPlan p;
    EXPECT_LE(fused_vs_reference(g, rewritten, p), 1e-5);
    EXPECT_TRUE(p.rewrites.empty());
    ASSERT_EQ(count_op(rewritten, "BatchNormalization"), 1);
    EXPECT_EQ(p.groups[p.group_of_node[node_index(rewritten, "BatchNormalization")]].kind, FusionKind::Normalization);
    const RefusedMerge* r = refusal(p, "batchnorm_fold");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->code, reason::kNoFold);
    const std::string bn = g.nodes()[node_index(g, "BatchNormalization")].name;
    const std::string mm = g.nodes()[node_index(g, "MatMul")].name;
    EXPECT_EQ(r->nodes, (std::vector<std::string>{mm, bn}));
    EXPECT_NE(r->message.find("cannot fold BatchNormalization '" + bn + "' into '" + mm + "': "), std::string::npos)
        << r->message;
    EXPECT_NE(r->message.find(c.why), std::string::npos) << r->message;
  }
}

TEST(BatchNormFold, RuleSwitchAndSkipLeaveBnAlone) {
  Graph g = gemm_bn_relu(true, {8});
  RuleRegistry rules = RuleRegistry::builtin();
  ASSERT_NE(rules.find("batchnorm_fold"), nullptr);
  for (const char* control : {"disable-rule=batchnorm_fold", "disable-kind=matmul_epilogue", "no-fusion"}) {
    SCOPED_TRACE(control);
    PlannerOptions o;
    o.apply_controls(control, rules);
    Graph rewritten;
    FusionPlan p;
    EXPECT_LE(fused_vs_reference(g, rewritten, p, o), 1e-5);
    EXPECT_EQ(count_op(rewritten, "BatchNormalization"), 1);
    EXPECT_TRUE(p.rewrites.empty());
    EXPECT_EQ(refusal(p, "batchnorm_fold"), nullptr) << "switched off is not a refusal";
  }
  PlannerOptions skip;
  skip.apply_controls("skip=BatchNormalization", rules);
  Graph rewritten = g;
  FusionPlan p = plan_fusion_rewriting(rewritten, skip, rules);
  EXPECT_EQ(count_op(rewritten, "BatchNormalization"), 1);
  ASSERT_NE(refusal(p, "batchnorm_fold"), nullptr);
  EXPECT_EQ(refusal(p, "batchnorm_fold")->code, reason::kSkipped);
}
