// docs/CUSTOM_RULES.md, compiled: the seed's custom fusion in C++. A user op "CustomOp"
// (y = x * sigmoid(alpha * x)) is fused with the ReLU after it by a user rule whose generate step
// writes the fused algorithm as one Halide expression; the result is checked against the unfused
// reference executor.
#include <iostream>

#include "fusion/ir/builder.h"
#include "fusion/report/report.h"
#include "generators/custom_rules.h"
#include "engine/engine.h"

using namespace gaf;
using Halide::Expr;
using Halide::Var;

// 1. The op: schema, shape inference, Halide algorithm.
void register_custom_op() {
  OpSchema s;
  s.name = "CustomOp";
  s.op_class = OpClass::Elementwise;
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}}; };
  s.build = [](BuildContext& b) {
    float alpha = b.attrs().get_float("alpha", 1.0f);
    std::vector<Var> v = b.vars(b.in(0).rank());
    Expr x = b.in(0)(v);
    b.define_output(0, v, x / (1.0f + Halide::exp(-alpha * x)));
  };
  OpRegistry::global().add(std::move(s));
}

int main() {
  try {
    register_custom_op();

    // 2. The rule: @register_fusion("CustomOp", "ReLU") with pattern() and generate().
    RuleRegistry rules = RuleRegistry::builtin();
    register_fusion_rule(rules, "custom_op_relu", Pattern("CustomOp") >> Pattern("Relu"),
                         [](const std::vector<TensorFunc>& in, const Graph& g, const FusionGroup& grp) {
                           float alpha = g.nodes()[grp.nodes[0]].attrs.get_float("alpha", 1.0f);  // CustomOp's
                           const TensorFunc& x = in[0];
                           return std::vector<TensorFunc>{
                               define_tensor("custom_op_relu", x.dtype, x.shape, [&](const std::vector<Var>& v) {
                                 Expr e = x(v);
                                 return Halide::max(e / (1.0f + Halide::exp(-alpha * e)), 0.0f);
                               })};
                         });

    // 3. A model using the op.
    GraphBuilder b("custom_example");
    Attributes attrs;
    attrs.set("alpha", 1.702f);
    ValueRef x = b.input("x", DType::Float32, {8, 64});
    b.output(b.relu(b.op1("CustomOp", {x}, attrs)), "y");
    Graph g = b.finish();
    infer_shapes(g);

    // 4. Plan and run through the Engine with these rules, compare with the reference.
    EngineOptions opts;
    opts.rules = rules;
    Engine engine(Graph(g), opts, "custom_example");
    const FusionPlan& plan = engine.plan();
    std::cout << fusion_log_lines(engine.graph(), plan) << "\n";
    if (plan.groups.size() != 1 || plan.groups[0].rule != "custom_op_relu") {
      std::cout << "custom_rule_example: FAIL (the rule did not form the group)\n";
      return 1;
    }
    Tensor in(DType::Float32, {8, 64});
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 17) * 0.4f - 3.2f;
    ReferenceExecutor ref;
    Tensor got = engine.run({{"x", in}}).at("y"), want = ref.run(g, {{"x", in}}).at("y");
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got.data<float>()[i] - want.data<float>()[i])));
    std::cout << "max abs difference vs reference: " << worst << "\n";
    std::cout << (worst <= 1e-5 ? "custom_rule_example: PASS\n" : "custom_rule_example: FAIL\n");
    return worst <= 1e-5 ? 0 : 1;
  } catch (const GafError& e) {
    std::cout << "custom_rule_example: error: " << e.what() << "\n";
    return 1;
  }
}
