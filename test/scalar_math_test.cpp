// No kernel calls scalar math. Every elementwise and broadcast op's kernel (each op alone), the
// normalisations, and the fused MatMul + GELU groups (tanh and erf forms, decomposed as PyTorch
// exports them) are compiled for the host target with the production schedules, and their
// assembly is searched for calls to functions it does not define other than Halide's runtime:
// a libm function (expf, tanhf, powf, ...) called once per vector lane is what the vector math of
// fusion/ops/math.cpp replaces. Any such call fails the test, named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "fusion/ir/builder.h"
#include "fusion/ops/registry.h"
#include "fusion/planner/planner.h"
#include "generators/group_pipeline.h"
#include "generators/weight_packing.h"
#include "planner_test_util.h"
#include "schedules/host_target.h"

using namespace gaf;
namespace fs = std::filesystem;

namespace {

// Functions that x86 assembly text calls (or tail-calls) without defining them, other than
// Halide's runtime (halide_*) and memcpy/memset.
std::set<std::string> external_calls(const std::string& text) {
  static const std::regex label(R"(^([A-Za-z_.$][\w.$]*):)");
  static const std::regex call(R"(^\s*(call|jmp)[lq]?\s+\*?([A-Za-z_.$][\w.$]*))");
  std::set<std::string> defined, called;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, label))
      defined.insert(m[1]);
    else if (std::regex_search(line, m, call))
      called.insert(m[2]);
  }
  std::set<std::string> out;
  for (const std::string& c : called)
    if (!defined.count(c) && c.rfind("halide_", 0) != 0 && c != "memcpy" && c != "memset") out.insert(c);
  return out;
}

// The external calls of `p` compiled for the host target.
std::set<std::string> compiled_calls(Halide::Pipeline p, const std::vector<Halide::Argument>& args,
                                     const std::string& tag) {
  fs::create_directories(GAF_TEST_SCRATCH);
  std::string path = std::string(GAF_TEST_SCRATCH) + "/scalar_math_" + tag + ".s";
  p.compile_to_assembly(path, args, "kernel", host_target());
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  fs::remove(path);
  return external_calls(text.str());
}

std::string describe(const Graph& g, const FusionGroup& grp) {
  std::string s;
  for (int n : grp.nodes) s += (s.empty() ? "" : "+") + g.nodes()[n].op_type;
  return s;
}

// "group: call, call; ..." for every group of `plan` whose kernel calls a function outside it.
std::string scalar_calls(const Graph& g, const FusionPlan& plan, const std::string& tag) {
  std::string found;
  for (const FusionGroup& grp : plan.groups) {
    KernelOptions opts;
    opts.params = host_params_for(host_target());
    GroupPipeline p(g, grp, opts, host_target());
    if (!p.has_pipeline()) continue;
    std::set<std::string> calls = compiled_calls(p.pipeline(), p.arguments(), tag + "_g" + std::to_string(grp.id));
    if (calls.empty()) continue;
    found += describe(g, grp) + ":";
    for (const std::string& c : calls) found += " " + c;
    found += "; ";
  }
  return found;
}

// Each node its own kernel, as the unfused executor runs it.
std::string unfused_scalar_calls(Graph g, const std::string& tag) {
  g = gaf::testing::prepared(std::move(g));
  PlannerOptions off;
  off.enabled = false;
  return scalar_calls(g, plan_fusion(g, off), tag);
}

// The plan gaf run makes (rewrites, builtin rules, packed weights); expects one group holding
// every node of the graph.
std::string fused_scalar_calls(Graph g, const std::string& tag) {
  g = gaf::testing::prepared(std::move(g));
  FusionPlan plan = plan_fusion_rewriting(g, {}, RuleRegistry::builtin());
  pack_matmul_weights(g, host_params_for(host_target()));
  EXPECT_EQ(plan.groups.size(), 1u) << tag << ": the case should fuse into one group";
  return scalar_calls(g, plan, tag);
}

// An odd innermost extent, so that vector tails are compiled too.
const std::vector<Dim> kShape = {2, 3, 37};

Tensor random(Shape s, uint32_t seed) { return gaf::testing::random_uniform(std::move(s), seed); }

struct Input {
  DType dtype;
  std::vector<Dim> shape;
};

// Ops whose float32 kernel needs something other than float inputs of kShape and no attributes.
struct OpCase {
  std::string label;
  std::vector<Input> inputs;
  Attributes attrs;
};

std::vector<OpCase> cases_of(const std::string& op, int arity) {
  const Input x{DType::Float32, kShape};
  Attributes a;
  if (op == "Gelu") {
    Attributes tanh_form;
    tanh_form.set("approximate", std::string("tanh"));
    return {{"Gelu", {x}, {}}, {"Gelu_tanh", {x}, tanh_form}};
  }
  if (op == "BatchNormalization") {  // scale, B, mean, var per channel (axis 1)
    const Input c{DType::Float32, {kShape[1]}};
    return {{op, {x, c, c, c, c}, a}};
  }
  if (op == "Cast") a.set("to", int64_t{1});
  // Quantization: a scalar scale and an int8 zero point (QuantizeLinear's output type).
  const Input scale{DType::Float32, {}}, zero_point{DType::Int8, {}};
  if (op == "QuantizeLinear") return {{op, {x, scale, zero_point}, a}};
  if (op == "DequantizeLinear") return {{op, {{DType::Int8, kShape}, scale, zero_point}, a}};
  if (op == "Where") return {{op, {{DType::Bool, kShape}, x, x}, a}};
  if (op == "Not") return {{op, {{DType::Bool, kShape}}, a}};
  return {{op, std::vector<Input>(arity, x), a}};
}

// The search itself: Halide's own tanh is one tanhf call per lane.
TEST(ScalarMath, SearchFindsHalideTanhCalls) {
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  Halide::Var i;
  Halide::Func f("f");
  f(i) = Halide::tanh(in(i));
  f.vectorize(i, 16);
  std::set<std::string> calls = compiled_calls(Halide::Pipeline(f), {in}, "halide_tanh");
  EXPECT_EQ(calls, std::set<std::string>{"tanhf"});
}

TEST(ScalarMath, NoElementwiseOpKernelCallsScalarMath) {
  int checked = 0;
  for (const std::string& name : OpRegistry::global().names()) {
    const OpSchema* s = OpRegistry::global().find(name);
    if (s->op_class != OpClass::Elementwise && s->op_class != OpClass::Broadcast) continue;
    for (const OpCase& c : cases_of(name, std::max(s->min_inputs, 1))) {
      GraphBuilder b("op");
      std::vector<ValueRef> ins;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        ins.push_back(b.input("x" + std::to_string(i), c.inputs[i].dtype, c.inputs[i].shape));
      b.output(b.op1(name, ins, c.attrs), "y");
      EXPECT_EQ(unfused_scalar_calls(b.finish(), c.label), "") << c.label;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20) << "the registry's elementwise ops should be here";
}

// Pow's exponent as GELU's tanh form and LayerNorm's variance have it: a rank-0 constant.
TEST(ScalarMath, PowByConstantCallsNoScalarMath) {
  for (float e : {2.0f, 3.0f, 0.5f}) {
    GraphBuilder b("pow");
    b.output(b.pow(b.input("x", DType::Float32, kShape), b.scalar(e)), "y");
    EXPECT_EQ(unfused_scalar_calls(b.finish(), "pow"), "") << "exponent " << e;
  }
}

TEST(ScalarMath, NormalizationKernelsCallNoScalarMath) {
  for (const std::string& op : {"Softmax", "LogSoftmax"}) {
    GraphBuilder b("norm");
    b.output(b.op1(op, {b.input("x", DType::Float32, kShape)}), "y");
    EXPECT_EQ(unfused_scalar_calls(b.finish(), op), "") << op;
  }
  GraphBuilder b("layernorm");
  auto x = b.input("x", DType::Float32, kShape);
  b.output(b.op1("LayerNormalization", {x, b.weight("s", random({37}, 1)), b.weight("b", random({37}, 2))}), "y");
  EXPECT_EQ(unfused_scalar_calls(b.finish(), "layernorm"), "");
}

// LayerNorm decomposed as PyTorch exports it (Pow(d, 2), Sqrt, Div), fused by the planner.
TEST(ScalarMath, DecomposedLayerNormGroupCallsNoScalarMath) {
  GraphBuilder b("ln");
  auto x = b.input("x", DType::Float32, {1, 16, 96});
  auto d = b.sub(x, b.reduce_mean(x, {-1}));
  auto var = b.reduce_mean(b.pow(d, b.scalar(2.0f)), {-1});
  auto y = b.div(d, b.sqrt(b.add(var, b.scalar(1e-12f))));
  b.output(b.add(b.mul(y, b.weight("s", random({96}, 3))), b.weight("b", random({96}, 4))), "y");
  EXPECT_EQ(fused_scalar_calls(b.finish(), "ln"), "");
}

// x @ W + bias, then GELU in the form `tanh_form` picks, decomposed into primitive ops.
Graph matmul_gelu(bool tanh_form) {
  GraphBuilder b("ffn");
  auto x = b.input("x", DType::Float32, {1, 16, 64});
  auto y = b.add(b.matmul(x, b.weight("w", random({64, 192}, 5))), b.weight("bias", random({192}, 6)));
  ValueRef one_plus;
  if (tanh_form) {
    auto inner = b.add(y, b.mul(b.pow(y, b.scalar(3.0f)), b.scalar(0.044715f)));
    one_plus = b.add(b.tanh(b.mul(inner, b.scalar(0.7978845608f))), b.scalar(1.0f));
  } else {
    one_plus = b.add(b.erf(b.div(y, b.scalar(1.4142135f))), b.scalar(1.0f));
  }
  b.output(b.mul(b.mul(y, one_plus), b.scalar(0.5f)), "out");
  return b.finish();
}

TEST(ScalarMath, FusedMatMulGeluGroupsCallNoScalarMath) {
  EXPECT_EQ(fused_scalar_calls(matmul_gelu(true), "gelu_tanh"), "");
  EXPECT_EQ(fused_scalar_calls(matmul_gelu(false), "gelu_erf"), "");
}

}  // namespace
