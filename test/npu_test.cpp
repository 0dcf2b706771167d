// The NPU tile model: the target file, the NPU schedules (tiles that fit the buffers, capacity
// errors) and the simulator's counts. On small MatMul, LayerNorm and elementwise groups the GM
// bytes the simulator counts equal the ones computed by hand from the tiles the schedule chose;
// NPU outputs equal the host's (fp32: 1e-5 relative, plus 1e-5 * sqrt(K) for MatMul sums).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

#include "fusion/ir/builder.h"
#include "fusion/models/bert.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "npu_test_util.h"
#include "planner_test_util.h"
#include "runtime/npu_target.h"
#include "tensor_compare.h"

using namespace gaf;

namespace {

using gaf::testing::random_uniform;
Tensor random(Shape s, uint32_t seed) { return random_uniform(std::move(s), seed); }

NpuTarget tiny_target() { return gaf::testing::tiny_npu_target(); }

struct NpuRun {
  Graph graph;
  FusionPlan plan;
  std::unique_ptr<Executable> ex;
  TensorMap out;
};

// Plans `g` (fused), runs it on the NPU model and returns the executor for its counts.
std::unique_ptr<NpuRun> run_npu(Graph g, const TensorMap& inputs, const NpuTarget& t) {
  auto r = std::make_unique<NpuRun>();
  r->graph = gaf::testing::prepared(std::move(g));
  r->plan = plan_fusion_rewriting(r->graph, {}, RuleRegistry::builtin());
  r->ex = std::make_unique<Executable>(build_executable(r->graph, r->plan, "gaf", {nullptr, &t}));
  r->out = r->ex->runner->run(inputs);
  return r;
}

int64_t tile_number(const std::string& describe, const std::string& pattern) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(describe, m, std::regex(pattern))) << describe;
  return m.empty() ? 0 : std::stoll(m[1]);
}

TEST(NpuTarget, DefaultFileLoadsWithSourcedValues) {
  const NpuTarget& t = default_npu_target();
  EXPECT_EQ(t.ai_cores, 32);
  EXPECT_EQ(t.ub_bytes, 256 * 1024);
  EXPECT_EQ(t.l0a_bytes, 64 * 1024);
  EXPECT_EQ(t.cube_m * t.cube_k * t.cube_n, 4096);
}

TEST(NpuTarget, BadFieldNamesFileAndField) {
  try {
    parse_npu_target(R"({"ai_cores": {"value": "many"}})", "my.json");
    FAIL() << "accepted a non-number";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("my.json: field 'ai_cores'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_npu_target("/nonexistent/target.json"), GafError);
}

// x[64, 96] @ w[96, 48]: cube tiles m x n, k blocks through L0, k panels through L1, as the
// schedule chose them for a small core. Each tile copies its rows of x (m x 96) and its columns
// of w (96 x n) from GM once, and writes m x n; the cube does m x n x 96 MACs per tile.
TEST(NpuMatMul, CountedBytesEqualHandComputed) {
  GraphBuilder b("mm");
  auto x = b.input("x", DType::Float32, {64, 96});
  b.output(b.matmul(x, b.weight("w", random({96, 48}, 1))), "y");
  Tensor xv = random({64, 96}, 2);
  auto r = run_npu(b.finish(), {{"x", xv}}, tiny_target());
  ASSERT_EQ(r->plan.groups.size(), 1u);
  std::string tiles = r->ex->npu_tiles(0).at(0);
  std::smatch t;
  ASSERT_TRUE(std::regex_search(
      tiles, t, std::regex("cube tiles (\\d+)x(\\d+) in L0C, k (\\d+) per L0A/L0B block, (\\d+) per L1 panel")))
      << tiles;
  const int64_t m = std::stoll(t[1]), n = std::stoll(t[2]), k0 = std::stoll(t[3]), k1 = std::stoll(t[4]);
  // The tiles fit half of each buffer: L0C 8 KB, L0A/L0B 2 KB, L1 8 KB.
  EXPECT_LE(m * n * 4, 4096);
  EXPECT_LE(m * k0 * 4, 1024);
  EXPECT_LE(k0 * n * 4, 1024);
  EXPECT_LE((m + n) * k1 * 4, 4096);
  EXPECT_EQ(96 % k1, 0);
  EXPECT_EQ(k1 % k0, 0);
  const int64_t tiles_count = ((64 + m - 1) / m) * ((48 + n - 1) / n);
  const NpuCounts& c = r->ex->runner->npu_counts().at(0);
  EXPECT_EQ(c.gm_read_bytes, tiles_count * (m * 96 + 96 * n) * 4);
  EXPECT_EQ(c.gm_write_bytes, 64 * 48 * 4);
  EXPECT_EQ(c.l1_to_l0_bytes, tiles_count * (m * 96 + 96 * n) * 4);
  EXPECT_EQ(c.cube_macs, tiles_count * m * n * 96);
  EXPECT_EQ(c.tiles, tiles_count);
  EXPECT_EQ(c.peak_bytes[kL0C], m * n * 4);
  EXPECT_EQ(c.peak_bytes[kL0A], m * k0 * 4);
  EXPECT_EQ(c.peak_bytes[kL0B], k0 * n * 4);
  EXPECT_EQ(c.peak_bytes[kL1], (m + n) * k1 * 4);
  // And it computes the MatMul.
  ReferenceExecutor ref;
  TensorMap want = ref.run(r->graph, {{"x", xv}});
  EXPECT_EQ(gaf::testing::compare_tensors(r->out.at("y"), want.at("y"), {1e-5, 1e-5 * std::sqrt(96.0)}), "");
}

// LayerNorm over rows of 40: tiles of R whole rows; x is read once per tile row, gamma and beta
// (40 each) once per tile, y written once per tile row.
TEST(NpuLayerNorm, CountedBytesEqualHandComputed) {
  GraphBuilder b("ln");
  auto x = b.input("x", DType::Float32, {64, 40});
  Attributes a;
  a.set("axis", int64_t{-1});
  a.set("epsilon", 1e-5f);
  b.output(b.op1("LayerNormalization", {x, b.weight("gamma", random({40}, 3)), b.weight("beta", random({40}, 4))}, a),
           "y");
  Tensor xv = random({64, 40}, 5);
  auto r = run_npu(b.finish(), {{"x", xv}}, tiny_target());
  ASSERT_EQ(r->plan.groups.size(), 1u);
  std::string tiles = r->ex->npu_tiles(0).at(0);
  const int64_t R = tile_number(tiles, "tiles of (\\d+) rows x 40");
  ASSERT_GT(R, 0);
  const int64_t n_tiles = (64 + R - 1) / R;  // ShiftInwards: the last tile overlaps its neighbour
  const NpuCounts& c = r->ex->runner->npu_counts().at(0);
  EXPECT_EQ(c.gm_read_bytes, n_tiles * (R * 40 + 40 + 40) * 4) << tiles;
  EXPECT_EQ(c.gm_write_bytes, n_tiles * R * 40 * 4) << tiles;
  EXPECT_EQ(c.cube_macs, 0);
  EXPECT_LE(c.peak_bytes[kUB], tiny_target().ub_bytes / 2);
  ReferenceExecutor ref;
  TensorMap want = ref.run(r->graph, {{"x", xv}});
  EXPECT_EQ(gaf::testing::compare_tensors(r->out.at("y"), want.at("y"), {1e-5, 1e-5}), "");
}

// relu(a * s + c), a and c [33, 50], s [50]: tiles of R rows; a and c R x 50 per tile, s 50.
TEST(NpuElementwise, CountedBytesEqualHandComputed) {
  GraphBuilder b("ew");
  auto a = b.input("a", DType::Float32, {33, 50});
  auto c = b.input("c", DType::Float32, {33, 50});
  auto s = b.input("s", DType::Float32, {50});
  b.output(b.relu(b.add(b.mul(a, s), c)), "y");
  TensorMap in{{"a", random({33, 50}, 6)}, {"c", random({33, 50}, 7)}, {"s", random({50}, 8)}};
  auto r = run_npu(b.finish(), in, tiny_target());
  ASSERT_EQ(r->plan.groups.size(), 1u);
  std::string tiles = r->ex->npu_tiles(0).at(0);
  const int64_t R = tile_number(tiles, "tiles of (\\d+) rows x 50");
  ASSERT_GT(R, 0);
  const int64_t n_tiles = (33 + R - 1) / R;
  const NpuCounts& cnt = r->ex->runner->npu_counts().at(0);
  EXPECT_EQ(cnt.gm_read_bytes, n_tiles * (2 * R * 50 + 50) * 4) << tiles;
  EXPECT_EQ(cnt.gm_write_bytes, n_tiles * R * 50 * 4) << tiles;
  EXPECT_EQ(cnt.launches, 1);
  ReferenceExecutor ref;
  TensorMap want = ref.run(r->graph, in);
  EXPECT_EQ(gaf::testing::compare_tensors(r->out.at("y"), want.at("y"), {1e-6, 1e-6}), "");
}

// A LayerNorm row of 4096 floats cannot be split (it is reduced whole) and does not fit half
// of a 16 KB UB: refused, naming the group and the buffer.
TEST(NpuCapacity, RowTooLongForUbIsRefused) {
  GraphBuilder b("ln_long");
  auto x = b.input("x", DType::Float32, {4, 4096});
  Attributes a;
  a.set("axis", int64_t{-1});
  b.output(
      b.op1("LayerNormalization", {x, b.weight("gamma", random({4096}, 3)), b.weight("beta", random({4096}, 4))}, a),
      "y");
  Graph g = gaf::testing::prepared(b.finish());
  FusionPlan plan = plan_fusion_rewriting(g, {}, RuleRegistry::builtin());
  try {
    const NpuTarget tiny = tiny_target();
    Executable ex = build_executable(g, plan, "gaf", {nullptr, &tiny});
    FAIL() << "a 4096-float row fitted a 16 KB UB";
  } catch (const GafError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("group g0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not fit the NPU target"), std::string::npos) << msg;
    EXPECT_NE(msg.find("of UB"), std::string::npos) << msg;
  }
}

// A 2-layer BERT (hidden 64, seq 16): the NPU model's outputs equal the host's, fused and
// unfused, and fusion moves fewer GM bytes in fewer launches.
TEST(NpuBert, OutputsEqualHostAndFusionSavesGmBytes) {
  BertConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 64;
  cfg.heads = 4;
  cfg.ffn = 256;
  Graph g = gaf::testing::prepared(build_bert(cfg), {{"batch", 1}, {"seq", 16}});
  TensorMap in{{"hidden_states", random({1, 16, 64}, 9)}, {"attention_mask", Tensor(DType::Float32, {1, 16})}};
  for (int64_t i = 0; i < 16; ++i) in.at("attention_mask").data<float>()[i] = i < 12 ? 1.0f : 0.0f;
  Graph fused_graph = g;
  FusionPlan fused_plan = plan_fusion_rewriting(fused_graph, {}, RuleRegistry::builtin());
  PlannerOptions off;
  off.enabled = false;
  FusionPlan unfused_plan = plan_fusion(g, off);
  Executable host = build_executable(fused_graph, fused_plan);
  const NpuTarget npu = default_npu_target();
  Executable npu_fused = build_executable(fused_graph, fused_plan, "gaf", {nullptr, &npu});
  Executable npu_unfused = build_executable(g, unfused_plan, "gaf", {nullptr, &npu});
  TensorMap want = host.runner->run(in);
  TensorMap got_fused = npu_fused.runner->run(in), got_unfused = npu_unfused.runner->run(in);
  gaf::testing::Tolerance tol{1e-4, 1e-4};
  for (const auto& [name, t] : want) {
    EXPECT_EQ(gaf::testing::compare_tensors(got_fused.at(name), t, tol), "") << "fused " << name;
    EXPECT_EQ(gaf::testing::compare_tensors(got_unfused.at(name), t, tol), "") << "unfused " << name;
  }
  NpuCounts fused, unfused;
  for (const NpuCounts& c : npu_fused.runner->npu_counts()) fused += c;
  for (const NpuCounts& c : npu_unfused.runner->npu_counts()) unfused += c;
  EXPECT_LT(fused.launches, unfused.launches);
  EXPECT_LT(fused.gm_read_bytes + fused.gm_write_bytes, unfused.gm_read_bytes + unfused.gm_write_bytes);
  EXPECT_EQ(fused.cube_macs, unfused.cube_macs);  // the same MatMuls either way
  for (int b = 0; b < kNpuBuffers; ++b) {
    EXPECT_LE(fused.peak_bytes[b], npu_buffer_capacity(default_npu_target(), b) / 2) << npu_buffer_name(b);
    EXPECT_LE(unfused.peak_bytes[b], npu_buffer_capacity(default_npu_target(), b) / 2) << npu_buffer_name(b);
  }
}

}  // namespace

namespace {

// Compiling the same kernels again in one process (gaf-tune does, per candidate) must not lose
// trace events: Halide skips tracing loads of an ImageParam whose name an earlier pipeline used.
TEST(NpuSimulator, CountsAreTheSameWhenKernelsAreCompiledAgain) {
  GraphBuilder b("again");
  auto x = b.input("x", DType::Float32, {1, 32, 64});
  auto y = b.add(b.matmul(x, b.weight("w", random({64, 48}, 21))), b.weight("bias", random({48}, 22)));
  b.output(b.relu(y), "y");
  Graph g = gaf::testing::prepared(b.finish());
  FusionPlan plan = plan_fusion_rewriting(g, {}, RuleRegistry::builtin());
  TensorMap in{{"x", random({1, 32, 64}, 23)}};
  std::vector<NpuCounts> runs;
  for (int i = 0; i < 3; ++i) {
    const NpuTarget tiny = tiny_target();
    Executable ex = build_executable(g, plan, "gaf", {nullptr, &tiny});
    ex.runner->run(in);
    NpuCounts total;
    for (const NpuCounts& c : ex.runner->npu_counts()) total += c;
    runs.push_back(total);
  }
  for (const NpuCounts& c : runs) {
    EXPECT_EQ(c.gm_read_bytes, runs[0].gm_read_bytes);
    EXPECT_EQ(c.gm_write_bytes, runs[0].gm_write_bytes);
    EXPECT_EQ(c.cube_macs, runs[0].cube_macs);
    EXPECT_GE(c.gm_read_bytes, (32 * 64 + 64 * 48 + 48) * 4) << "every input is read at least once";
  }
}

}  // namespace
