// Peak-memory legality (GAF-NF003): the planner's model of peak memory against what the fused
// executor measures, a merge that would raise the peak refused (and the refusal paying off in the
// measured peak), and BERT's merges untouched by the check.
#include <gtest/gtest.h>

#include "engine/model_source.h"
#include "fusion/ir/builder.h"
#include "fusion/planner/group_info.h"
#include "fusion/planner/peak_memory.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;
using gaf::testing::filled;
using gaf::testing::prepared;

namespace {

// m = x @ W (256 KiB), r = mean of each row of m (1 KiB), z = r * P (256 KiB). Unfused, m is freed
// once r exists, so at most one 256 KiB tensor (plus r) is live. Fusing the ReduceMean into its
// broadcast consumer keeps m alive while z is written: two 256 KiB tensors at once.
Graph reduce_then_broadcast() {
  GraphBuilder b("peak");
  auto x = b.input("x", DType::Float32, {256, 64});
  auto m = b.matmul(x, b.weight("w", filled({64, 256}, 0.01f)));
  auto r = b.reduce_mean(m, {1});
  b.output(b.mul(r, b.weight("p", filled({256, 256}, 0.5f))), "z");
  return prepared(b.finish());
}

std::string name_of(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes())
    if (n.op_type == op) return n.name;
  throw std::runtime_error("no " + op + " node");
}

const RefusedMerge* peak_refusal(const FusionPlan& p) {
  for (const RefusedMerge& r : p.refused)
    if (r.code == reason::kPeakMemory) return &r;
  return nullptr;
}

int64_t measured_peak(const Graph& g, const FusionPlan& p) {
  Executable ex = build_executable(g, p);
  ex.runner->run(make_default_inputs(g, 3));
  return static_cast<int64_t>(ex.runner->peak_bytes());
}

int64_t predicted_peak(const Graph& g, const FusionPlan& p, bool with_internal) {
  GraphView v(g);
  PeakMemoryModel model(v);
  auto internal = [&](int gi) {
    if (!with_internal) return int64_t{0};
    std::vector<int> nodes = p.groups[gi].nodes;
    return internal_root_bytes(v, nodes);
  };
  return model.peak(p.group_of_node, internal).bytes;
}

}  // namespace

TEST(PeakMemory, MergeRaisingThePeakIsRefused) {
  Graph g = reduce_then_broadcast();
  const int64_t big = 256 * 256 * 4, row = 256 * 4;
  FusionPlan p = plan_fusion(g);
  const RefusedMerge* r = peak_refusal(p);
  ASSERT_NE(r, nullptr);
  const std::string mean = name_of(g, "ReduceMean"), mul = name_of(g, "Mul");
  EXPECT_EQ(r->nodes, (std::vector<std::string>{mean, mul}));
  EXPECT_NE(r->message.find("fusing '" + mean + "' into '" + mul + "' would raise the predicted peak memory from " +
                            std::to_string(big + row) + " to " + std::to_string(2 * big) + " bytes"),
            std::string::npos)
      << r->message;
  EXPECT_EQ(p.groups.size(), 3u);

  // The model is the executor's: with the check off the merge happens, and the measured peak
  // (which sees stored values, not Halide's internal buffers) is what the model predicted.
  PlannerOptions off;
  off.check_peak_memory = false;
  FusionPlan merged = plan_fusion(g, off);
  EXPECT_EQ(merged.groups.size(), 2u);
  EXPECT_EQ(measured_peak(g, p), big + row);
  EXPECT_EQ(measured_peak(g, merged), 2 * big);
  EXPECT_EQ(predicted_peak(g, p, false), big + row);
  EXPECT_EQ(predicted_peak(g, merged, false), 2 * big);
}

TEST(PeakMemory, InternalRootBuffersCount) {
  // m = x @ W, s = softmax(m), y = s^T, each 4 KiB. Fused, {Softmax, Transpose} computes s at root
  // inside the pipeline (a layout op follows it), so m, s and y are live at once: 12 KiB, where
  // the unfused schedule never holds more than two of them.
  GraphBuilder b("internal");
  auto x = b.input("x", DType::Float32, {32, 16});
  auto s = b.softmax(b.matmul(x, b.weight("w", filled({16, 32}, 0.02f))));
  b.output(b.transpose(s, {1, 0}), "y");
  Graph g = prepared(b.finish());
  const int64_t t = 32 * 32 * 4;
  const std::string softmax = name_of(g, "Softmax"), transpose = name_of(g, "Transpose");

  PlannerOptions off;
  off.check_peak_memory = false;
  off.disabled_rules.insert("attention_scores");  // it would take MatMul + Softmax first
  FusionPlan merged = plan_fusion(g, off);
  ASSERT_EQ(merged.groups.size(), 2u);
  const FusionGroup& grp = merged.groups[1];
  ASSERT_EQ(grp.decisions.size(), 2u);
  EXPECT_EQ(grp.decisions[0].decision, ComputeDecision::Root) << grp.decisions[0].reason;
  EXPECT_EQ(internal_root_bytes(GraphView(g), grp.nodes), t);
  EXPECT_EQ(predicted_peak(g, merged, true), 3 * t);
  EXPECT_EQ(predicted_peak(g, merged, false), 2 * t) << "what the executor's store sees";

  PlannerOptions checked;
  checked.disabled_rules.insert("attention_scores");
  FusionPlan p = plan_fusion(g, checked);
  EXPECT_EQ(p.groups.size(), 3u);
  const RefusedMerge* r = peak_refusal(p);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->nodes, (std::vector<std::string>{softmax, transpose}));
  EXPECT_NE(r->message.find("from " + std::to_string(2 * t) + " to " + std::to_string(3 * t) + " bytes"),
            std::string::npos)
      << r->message;
  EXPECT_NE(r->message.find("plus " + std::to_string(t) + " bytes of internal root buffers"), std::string::npos)
      << r->message;
}

TEST(PeakMemory, BertMergesAreNotRefused) {
  static ReferenceExecutor folder;
  ModelOptions mo;
  mo.layers = 1;  // builtin:bert-base --layers 1 (seq 128)
  LoadedModel m = load_model("builtin:bert-base", mo, folder);
  Graph with = m.graph, without = m.graph;
  FusionPlan p = plan_fusion_rewriting(with, {}, RuleRegistry::builtin());
  PlannerOptions off;
  off.check_peak_memory = false;
  FusionPlan q = plan_fusion_rewriting(without, off, RuleRegistry::builtin());
  for (const RefusedMerge& r : p.refused) EXPECT_NE(r.code, reason::kPeakMemory) << r.message;
  EXPECT_EQ(p.groups.size(), 6u) << "the mask, then Q/K/V, attention, out proj+LN, FFN1, FFN2+LN";
  ASSERT_EQ(p.groups.size(), q.groups.size());
  for (size_t i = 0; i < p.groups.size(); ++i) EXPECT_EQ(p.groups[i].nodes, q.groups[i].nodes);
  // Fusion lowers BERT's predicted peak (fewer stored intermediates).
  PlannerOptions none;
  none.enabled = false;
  Graph plain = m.graph;
  FusionPlan u = plan_fusion(plain, none);
  EXPECT_LT(predicted_peak(with, p, true), predicted_peak(plain, u, true));
}

TEST(PeakMemory, ArenaIsReusedAcrossRunsWithoutClobberingReturnedOutputs) {
  // run() keeps intermediates in one arena laid out by plan_memory: a second run reuses it, the
  // outputs the first run returned are its own, and both runs equal the reference.
  static ReferenceExecutor folder;
  ModelOptions mo;
  mo.layers = 2;
  mo.seq = 16;
  LoadedModel m = load_model("builtin:bert-base", mo, folder);
  Graph g = m.graph;
  FusionPlan p = plan_fusion_rewriting(g, {}, RuleRegistry::builtin());
  Executable ex = build_executable(g, p);
  TensorMap in1 = make_default_inputs(g, 1), in2 = make_default_inputs(g, 2);
  TensorMap first = ex.runner->run(in1);
  Tensor kept = first.begin()->second.clone();
  TensorMap second = ex.runner->run(in2);
  ASSERT_EQ(first.size(), 1u);
  const std::string out = first.begin()->first;
  EXPECT_EQ(gaf::testing::compare_tensors(first.at(out), kept, {0, 0}), "")
      << "the second run overwrote the first's output";
  ReferenceExecutor ref;
  EXPECT_EQ(gaf::testing::compare_tensors(first.at(out), ref.run(m.graph, in1).at(out), {1e-4, 1e-4}), "");
  EXPECT_EQ(gaf::testing::compare_tensors(second.at(out), ref.run(m.graph, in2).at(out), {1e-4, 1e-4}), "");
  EXPECT_NE(gaf::testing::compare_tensors(first.at(out), second.at(out), {1e-4, 1e-4}), "") << "inputs differ";
}
