// gaf::Engine: load -> plan -> compile -> run in one object; runs into caller-owned outputs that
// a steady-state run reuses without allocating or faulting in a page.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/engine.h"
#include "fusion/ir/builder.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;

namespace {

// x[64, 128] @ W[128, 96] + b, ReLU, then Softmax over the last axis, and a second output
// u * 2 of 4 MB (u [1024, 1024]): a MatMul whose weights are packed, a normalization with
// internal statistics, and an elementwise group whose output is too large for malloc to hand
// back pages already touched (a fresh 4 MB output per run faults its pages in).
Graph small_model() {
  GraphBuilder b("small");
  ValueRef x = b.input("x", DType::Float32, {64, 128});
  ValueRef u = b.input("u", DType::Float32, {1024, 1024});
  ValueRef w = b.weight("W", gaf::testing::random_uniform({128, 96}, 1, 0.1f));
  ValueRef bias = b.weight("b", gaf::testing::random_uniform({96}, 2, 0.1f));
  b.output(b.softmax(b.relu(b.add(b.matmul(x, w), bias))), "y");
  b.output(b.mul(u, b.scalar(2.0f)), "z");
  return gaf::testing::prepared(b.finish());
}

TensorMap small_inputs() {
  return {{"x", gaf::testing::random_uniform({64, 128}, 3)}, {"u", gaf::testing::random_uniform({1024, 1024}, 4)}};
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace

TEST(Engine, RunsTheModelAsTheReferenceDoes) {
  Graph g = small_model();
  ReferenceExecutor ref;
  TensorMap want = ref.run(g, small_inputs());
  Engine engine(std::move(g), EngineOptions{});
  EXPECT_GE(engine.plan().groups.size(), 1u);
  TensorMap got = engine.run(small_inputs());
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want)
    EXPECT_EQ(gaf::testing::compare_tensors(got.at(name), t, {1e-5, 1e-6}), "") << name;
}

TEST(Engine, StepsRunOnceInOrder) {
  Engine engine(small_model(), EngineOptions{});
  const FusionPlan* plan = &engine.plan();
  Executable* ex = &engine.compile();
  EXPECT_EQ(&engine.plan(), plan) << "plan() plans once";
  EXPECT_EQ(&engine.compile(), ex) << "compile() compiles once";
  EXPECT_THROW(engine.loaded_graph(), GafError) << "not kept unless asked";
}

TEST(Engine, KeepsTheLoadedGraphWhenAsked) {
  EngineOptions o;
  o.keep_loaded = true;
  Engine engine(small_model(), o);
  engine.compile();
  EXPECT_EQ(engine.loaded_graph().nodes().size(), small_model().nodes().size());
  // The loaded graph's MatMul weights keep their logical shape; the planned graph's are packed
  // (when this target's tile width divides N).
  EXPECT_EQ(engine.loaded_graph().value("W").type.shape(), (Shape{128, 96}));
}

TEST(Engine, RefusesAnUnknownRuleBeforeAnyWork) {
  EngineOptions o;
  o.fusion.disabled_rules.insert("no_such_rule");
  EXPECT_THROW(Engine(small_model(), o), GafError);
}

TEST(Engine, UnfusedOptionGivesOneGroupPerNode) {
  EngineOptions o;
  o.fusion.enabled = false;
  Engine engine(small_model(), o);
  EXPECT_EQ(engine.plan().groups.size(), engine.graph().nodes().size());
}

// Caller-owned outputs: the second run writes into the tensors of the first, and neither
// allocates output memory nor faults in a page (the intermediates live in the arena).
TEST(Engine, SteadyStateRunReusesOutputsWithoutPageFaults) {
  Engine engine(small_model(), EngineOptions{});
  TensorMap in = small_inputs(), outs;
  engine.run(in, outs);  // the first run allocates the outputs
  const void* y = outs.at("y").raw();
  const void* z = outs.at("z").raw();
  long before = minor_faults();
  engine.run(in, outs);
  long faults = minor_faults() - before;
  EXPECT_EQ(outs.at("y").raw(), y);
  EXPECT_EQ(outs.at("z").raw(), z);
  EXPECT_EQ(faults, 0) << "a steady-state run should take no page faults";

  // What the test guards against: a run into fresh outputs faults their pages in.
  before = minor_faults();
  TensorMap fresh = engine.run(in);
  EXPECT_GT(minor_faults() - before, 100) << "fresh 4 MB outputs should have faulted";
}

TEST(Engine, ReplacesCallerOutputsOfTheWrongShape) {
  Engine engine(small_model(), EngineOptions{});
  TensorMap outs{{"y", Tensor(DType::Float32, {3})}};
  engine.run(small_inputs(), outs);
  EXPECT_EQ(outs.at("y").shape(), (Shape{64, 96}));
  EXPECT_EQ(outs.at("z").shape(), (Shape{1024, 1024}));
}

// compile_aot before or after compile(): no order between them. After compile() the weights are
// packed in place for this machine, and the library written then is the one a fresh engine
// writes (same plan file, same weights file); for another target it is refused in one line.
TEST(Engine, CompileAotBeforeOrAfterCompileWritesTheSameLibrary) {
  const std::string base = ::testing::TempDir() + "/engine_compile_aot";
  std::filesystem::remove_all(base);
  auto slurp = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  Engine fresh(small_model(), EngineOptions{});
  fresh.compile_aot(AotOptions{"small", base + "/fresh"});
  Engine ran(small_model(), EngineOptions{});
  ran.run(small_inputs());  // compiles: the weights are packed in place
  ran.compile_aot(AotOptions{"small", base + "/after"});
  for (const char* file : {"/small.plan.json", "/small.weights"})
    EXPECT_EQ(slurp(base + "/after" + file), slurp(base + "/fresh" + file)) << file;
  try {
    ran.compile_aot(AotOptions{"small", base + "/avx2", "", "x86-64-linux-sse41-avx-f16c-fma-avx2"});
    ADD_FAILURE() << "another target after compile() was accepted";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("compile_aot after compile(): the weights are packed for this machine"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(base + "/avx2/small.a"));
}

// The Engine's passes are a list in one order, each with what it did to this model: load, shard,
// the rules' graph rewrites that applied (BERT's Q/K/V as one horizontal MatMul), group, pack.
TEST(Engine, ListsItsPassesInTheOrderTheyRan) {
  EngineOptions o;
  o.model.layers = 1;
  o.model.seq = 8;
  Engine engine("builtin:bert-base", o);
  engine.compile();
  std::vector<std::string> names;
  for (const PassRun& p : engine.plan().passes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"load", "shard", "horizontal_matmul", "group", "pack"}));
  EXPECT_EQ(engine.plan().passes[1].did, "off");
  EXPECT_EQ(engine.plan().passes[2].did, "1 rewrites, 0 refused");
}
