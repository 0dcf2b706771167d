// gaf-tune --target npu-tile: on a tiny model (MatMul+bias+GELU, LayerNorm) and a tiny NPU
// target the search never ends slower than the default tiles, the database round-trips, the
// NPU executor uses the tuned tiles (and only for the target they were tuned for), and an
// illegal override is refused with a message naming the parameter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "apps/gaf-tune/npu_search_space.h"
#include "apps/gaf-tune/tuner.h"
#include "cli_util.h"
#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "npu_test_util.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;
namespace fs = std::filesystem;

namespace {

Tensor random(Shape s, uint32_t seed) { return gaf::testing::random_uniform(std::move(s), seed); }

// gelu(x @ W + b) and, independently, LayerNorm(z): one cube group and one row group.
Graph tiny_model() {
  GraphBuilder b("npu_tune");
  auto x = b.input("x", DType::Float32, {64, 64});
  auto y = b.add(b.matmul(x, b.weight("w", random({64, 96}, 1))), b.weight("b", random({96}, 2)));
  b.output(b.mul(b.mul(y, b.add(b.erf(b.div(y, b.scalar(1.4142135f))), b.scalar(1.0f))), b.scalar(0.5f)), "act");
  auto z = b.input("z", DType::Float32, {64, 96});
  Attributes a;
  a.set("axis", int64_t{-1});
  a.set("epsilon", 1e-5f);
  b.output(b.op1("LayerNormalization", {z, b.weight("gamma", random({96}, 3)), b.weight("beta", random({96}, 4))}, a),
           "ln");
  return gaf::testing::prepared(b.finish());
}

TensorMap tiny_inputs() { return {{"x", random({64, 64}, 5)}, {"z", random({64, 96}, 6)}}; }

const FusionGroup& group_with(const Graph& g, const FusionPlan& plan, const std::string& op) {
  for (const FusionGroup& grp : plan.groups)
    for (int n : grp.nodes)
      if (g.nodes()[n].op_type == op) return grp;
  throw GafError("no group with " + op);
}

std::string scratch(const std::string& name) {
  fs::create_directories(GAF_TEST_SCRATCH);
  std::string p = std::string(GAF_TEST_SCRATCH) + "/" + name;
  fs::remove(p);
  return p;
}

// A database holding `p` for the group with `op`, for target `t`.
ScheduleDb db_with(const Graph& g, const FusionPlan& plan, const std::string& op, const NpuScheduleParams& p,
                   const NpuTarget& t) {
  TunedSchedule s;
  s.signature = group_with(g, plan, op).signature;
  s.target = "npu-tile";
  s.machine = npu_machine_key(t);
  s.npu = p;
  s.date = "2026-12-02";
  ScheduleDb db;
  db.put(s);
  return db;
}

double modeled_ms(const Executable& ex, const NpuTarget& t) {
  double ms = 0;
  for (const NpuCounts& c : ex.runner->npu_counts()) ms += npu_modeled_time(c, t).total_us / 1000;
  return ms;
}

auto no_progress = [](size_t, size_t, const std::string&, int, int, double) {};

}  // namespace

TEST(NpuSearchSpace, GridsFromTheGroupsExtents) {
  Graph g = tiny_model();
  FusionPlan plan = plan_fusion(g, {});
  const NpuTarget t = gaf::testing::tiny_npu_target();
  tune::NpuSearchSpace cube(g, group_with(g, plan, "MatMul"), t), rows(g, group_with(g, plan, "LayerNormalization"), t);
  std::mt19937 rng(1);
  for (int i = 0; i < 50; ++i) {
    NpuScheduleParams c = cube.random(rng), r = rows.random(rng);
    EXPECT_TRUE(c.m == 0 || c.m == 16 || c.m == 32 || c.m == 64) << c.str();
    EXPECT_TRUE(c.k_l1 == 0 || 64 % c.k_l1 == 0) << c.str();
    EXPECT_EQ(c.rows, 0) << c.str();
    EXPECT_EQ(r.m + r.n + r.k_l1, 0) << r.str();
    for (const NpuScheduleParams& n : cube.neighbours(c)) EXPECT_FALSE(n == c);
  }
  EXPECT_EQ(cube.size(), 4u * 5u * 4u);  // m {0,16,32,64}, n {0,16,32,64,96}, k_l1 {0,16,32,64}
}

TEST(NpuTune, NoSlowerRoundTripsAndTheExecutorUsesIt) {
  Graph g = tiny_model();
  FusionPlan plan = plan_fusion(g, {});
  ASSERT_EQ(plan.groups.size(), 2u);
  const NpuTarget t = gaf::testing::tiny_npu_target();
  std::string path = scratch("npu_tuned.json");
  ScheduleDb db;
  tune::TuneOptions o;
  o.budget_s = 120;
  o.trials = 5;
  std::atomic<bool> stop{false};
  auto results = tune::tune_plan_npu(g, plan, t, db, path, o, stop, no_progress);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    std::printf("%s: default %.3f us, tuned %.3f us (%s), %d trials, %d rejected\n", r.label.c_str(),
                r.default_ms * 1e3, r.best_ms * 1e3, r.best.c_str(), r.trials, r.rejected);
    EXPECT_GT(r.trials, 0) << r.label;
    EXPECT_LE(r.trials, o.trials) << r.label;
    EXPECT_GT(r.default_ms, 0) << r.label;
    EXPECT_LE(r.best_ms, r.default_ms) << r.label;
  }

  ScheduleDb back = ScheduleDb::load(path, false);
  ASSERT_EQ(back.entries().size(), 2u);
  for (const auto& r : results) {
    const TunedSchedule* s = back.find(r.signature, "npu-tile", npu_machine_key(t));
    ASSERT_NE(s, nullptr) << r.label;
    EXPECT_EQ(s->npu.str(), r.best) << r.label;
    EXPECT_DOUBLE_EQ(s->best_ms, r.best_ms) << r.label;
    EXPECT_DOUBLE_EQ(s->default_ms, r.default_ms) << r.label;
  }

  // Used: both groups tuned; same outputs; a group whose tuned point differs from the default gets
  // different tiles. The executor's modeled time is at most the tuned one (the simulator may lose
  // trace events of a compile, which only lowers counts: see GroupTimer::model_npu), so it is no
  // more than the default's.
  TensorMap in = tiny_inputs();
  Executable tuned = build_executable(g, plan, "gaf", {&back, &t}),
             plain = build_executable(g, plan, "gaf", {nullptr, &t});
  EXPECT_EQ(tuned.stats.tuned_groups, 2);
  EXPECT_EQ(plain.stats.tuned_groups, 0);
  TensorMap a = tuned.runner->run(in), b = plain.runner->run(in);
  for (const char* out : {"act", "ln"})
    EXPECT_EQ(gaf::testing::compare_tensors(a.at(out), b.at(out), {1e-5, 1e-5}), "") << out;
  double tuned_sum = 0, default_sum = 0;
  for (const auto& r : results) tuned_sum += r.best_ms, default_sum += r.default_ms;
  EXPECT_LE(modeled_ms(tuned, t), tuned_sum + 1e-12);
  EXPECT_LE(tuned_sum, default_sum);
  for (const auto& r : results) {
    size_t s = 0;
    while (plan.groups[s].signature != r.signature) ++s;
    if (r.best != NpuScheduleParams{}.str()) EXPECT_NE(tuned.npu_tiles(s), plain.npu_tiles(s)) << r.label;
    EXPECT_LE(npu_modeled_time(tuned.runner->npu_counts()[s], t).total_us / 1000, r.best_ms + 1e-12) << r.label;
  }

  // A rerun asking for no more trials than were spent keeps the database's entries.
  o.trials = 1;
  auto again = tune::tune_plan_npu(g, plan, t, back, path, o, stop, no_progress);
  for (const auto& r : again) {
    EXPECT_TRUE(r.resumed) << r.label;
    EXPECT_DOUBLE_EQ(r.best_ms, back.find(r.signature, "npu-tile", npu_machine_key(t))->best_ms) << r.label;
  }
}

TEST(NpuTune, TunedTilesAreAppliedOnlyForTheirTarget) {
  Graph g = tiny_model();
  FusionPlan plan = plan_fusion(g, {});
  const NpuTarget t = gaf::testing::tiny_npu_target();
  const size_t mm = group_with(g, plan, "MatMul").id;
  ScheduleDb db = db_with(g, plan, "MatMul", NpuScheduleParams{16, 16, 0, 0, 0}, t);
  Executable ex = build_executable(g, plan, "gaf", {&db, &t});
  EXPECT_EQ(ex.stats.tuned_groups, 1);
  ASSERT_FALSE(ex.npu_tiles(mm).empty());
  EXPECT_NE(ex.npu_tiles(mm)[0].find("cube tiles 16x16"), std::string::npos) << ex.npu_tiles(mm)[0];

  // Same name, other numbers: another machine key, so the entry is ignored.
  NpuTarget edited = t;
  edited.ub_bytes *= 2;
  EXPECT_NE(npu_machine_key(edited), npu_machine_key(t));
  EXPECT_EQ(build_executable(g, plan, "gaf", {&db, &edited}).stats.tuned_groups, 0);
  EXPECT_EQ(build_executable(g, plan, "gaf", {&db, &default_npu_target()}).stats.tuned_groups, 0);
  // Host runs ignore npu-tile entries.
  EXPECT_EQ(build_executable(g, plan, "gaf", {&db}).stats.tuned_groups, 0);
}

TEST(NpuTune, IllegalOverridesAreRefusedNamingTheParameter) {
  Graph g = tiny_model();
  FusionPlan plan = plan_fusion(g, {});
  const NpuTarget t = gaf::testing::tiny_npu_target();
  auto error_of = [&](const std::string& op, const NpuScheduleParams& p) -> std::string {
    ScheduleDb db = db_with(g, plan, op, p, t);
    try {
      Executable ex = build_executable(g, plan, "gaf", {&db, &t});
    } catch (const GafError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  std::string k = error_of("MatMul", NpuScheduleParams{0, 0, 24, 0, 0});
  EXPECT_NE(k.find("NPU parameter k_l1=24 does not divide K=64"), std::string::npos) << k;
  // 64 x 96 floats in L0C is 24 KB: more than half of the tiny target's 8 KB.
  std::string tile = error_of("MatMul", NpuScheduleParams{64, 96, 0, 0, 0});
  EXPECT_NE(tile.find("the output tile 64x96 (NPU parameters m=64 n=96"), std::string::npos) << tile;
  EXPECT_NE(tile.find("of L0C"), std::string::npos) << tile;
  // 64 rows of 96 floats in several UB buffers: far more than half of 16 KB.
  std::string rows = error_of("LayerNormalization", NpuScheduleParams{0, 0, 0, 64, 0});
  EXPECT_NE(rows.find("64 rows of 96 elements (NPU parameter rows)"), std::string::npos) << rows;
  EXPECT_NE(rows.find("of UB"), std::string::npos) << rows;
}

TEST(ScheduleDbFile, NpuEntriesRoundTripAndAreChecked) {
  std::string path = scratch("npu_entry.json");
  TunedSchedule s;
  s.signature = "sig";
  s.target = "npu-tile";
  s.machine = "tiny 0123";
  s.npu = NpuScheduleParams{32, 64, 128, 0, 0};
  s.default_ms = 0.02;
  s.best_ms = 0.01;
  s.trials = 5;
  s.date = "2026-12-02";
  ScheduleDb db;
  db.put(s);
  db.save(path);
  const TunedSchedule* back = ScheduleDb::load(path, false).find("sig", "npu-tile", "tiny 0123");
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->npu == s.npu) << back->npu.str();
  EXPECT_DOUBLE_EQ(back->best_ms, 0.01);
  std::ofstream(path) << R"({"schema": "graph-autofusion/schedules/1", "entries": [{"signature": "s",
      "target": "npu-tile", "machine": "m", "date": "d", "default_ms": 1, "best_ms": 1, "trials": 1,
      "params": {"npu": {"m": -16, "n": 0, "k_l1": 0, "rows": 0, "chunk": 0}}}]})";
  try {
    ScheduleDb::load(path, false);
    FAIL() << "a negative tile side was accepted";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'params.npu.m'"), std::string::npos) << e.what();
  }
}

// The CLI end to end on a one-layer BERT: gaf-tune writes npu-tile entries for every group and
// gaf report --target npu-tile --schedules uses them.
TEST(NpuTuneCli, TunesOneLayerBertAndReportUsesTheDatabase) {
  std::string db = scratch("npu_bert1.json");
  std::string tune_bin = (fs::path(GAF_BINARY).parent_path() / "gaf-tune").string();
  std::string model = "builtin:bert-base --layers 1 --seq 8";
  std::string dir = gaf::testing::scratch_dir("npu_tune_cli");
  auto t = gaf::testing::run_command(tune_bin + " " + model + " --target npu-tile --db " + db + " --trials 1", dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("target npu-tile (ascend910-like "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Mullapudi2016: n/a for npu-tile"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("saved " + db + " (6 entries)"), std::string::npos) << t.out;
  const std::string gaf = GAF_BINARY;
  auto r = gaf::testing::run_command(gaf + " report " + model + " --target npu-tile --schedules " + db, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("schedules: 6 of 6 groups use tuned NPU tiles"), std::string::npos) << r.out;
  // A host report reads the database's host entries (gaf-tune's guard): npu-tile ones change nothing.
  auto host = gaf::testing::run_command(gaf + " report " + model + " --json x.json --schedules " + db, dir);
  EXPECT_EQ(host.exit_code, 0) << host.err;
  EXPECT_NE(host.out.find("wrote x.json"), std::string::npos) << host.out;
}
