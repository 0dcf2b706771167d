// gaf-tune: the search on a small planned graph writes a database that round-trips and that the
// fused executor uses; an interrupted search keeps the group in progress and a rerun resumes
// it; corrupt or mismatched databases are refused with the file, entry and field named; the CLI
// runs end to end on a one-layer BERT and `gaf run --schedules` and `gaf compile --schedules`
// report the tuned groups and kernels.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "apps/gaf-tune/search_space.h"
#include "apps/gaf-tune/tuner.h"
#include "cli_util.h"
#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "schedules/host_target.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;
namespace fs = std::filesystem;

namespace {

Tensor random(Shape s, uint32_t seed) { return gaf::testing::random_uniform(std::move(s), seed); }

// relu(x @ W + b) then a softmax: a MatMul group and a row group.
Graph small_graph() {
  GraphBuilder b("small");
  auto x = b.input("x", DType::Float32, {24, 40});
  auto y = b.relu(b.add(b.matmul(x, b.weight("w", random({40, 50}, 1))), b.weight("b", random({50}, 2))));
  b.output(b.softmax(y), "out");
  return gaf::testing::prepared(b.finish());
}

std::string scratch(const std::string& name) {
  fs::create_directories(GAF_TEST_SCRATCH);
  std::string p = std::string(GAF_TEST_SCRATCH) + "/" + name;
  fs::remove(p);
  return p;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

gaf::testing::CommandResult cli(const std::string& cmd) {
  return gaf::testing::run_command(cmd, gaf::testing::scratch_dir("tune_cli"));
}

auto no_progress = [](size_t, size_t, const std::string&, int, int, double) {};

}  // namespace

TEST(TuneSearchSpace, OnlyLegalPointsAndNeighbours) {
  tune::SearchSpace mm(true, 32), rows(false, 32);
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) {
    tune::Candidate c = mm.random(rng);
    EXPECT_LE(c.matmul.vectors * c.matmul.rows + c.matmul.vectors + 1, 32) << c.str();
    for (const tune::Candidate& n : mm.neighbours(c)) EXPECT_TRUE(mm.legal(n)) << n.str();
  }
  EXPECT_EQ(rows.size(), 7u) << "row groups search the task size only";
  EXPECT_GT(mm.size(), 100u);
}

TEST(Tuner, DatabaseRoundTripsAndIsUsed) {
  Graph g = small_graph();
  FusionPlan plan = plan_fusion(g, {});
  std::string path = scratch("tuned.json");
  ScheduleDb db;
  tune::TuneOptions o;
  o.budget_s = 120;
  o.trials = 4;
  o.repeat = 3;
  std::atomic<bool> stop{false};
  auto results = tune::tune_plan(g, plan, db, path, o, stop, no_progress);
  ASSERT_EQ(results.size(), plan.groups.size());
  for (const auto& r : results) {
    EXPECT_GT(r.trials, 0) << r.label;
    EXPECT_LE(r.trials, 4) << r.label;
    EXPECT_EQ(r.rejected, 0) << r.label;
    EXPECT_LE(r.best_ms, r.default_ms) << r.label;
    EXPECT_TRUE(r.mullapudi_ms > 0 || !r.mullapudi_note.empty()) << r.label;
  }
  ScheduleDb back = ScheduleDb::load(path, false);
  ASSERT_EQ(back.entries().size(), plan.groups.size());
  for (const FusionGroup& grp : plan.groups) {
    const TunedSchedule* s = back.find(grp.signature, "host", host_machine_key());
    ASSERT_NE(s, nullptr);
    const TunedSchedule* mine = db.find(grp.signature, "host", host_machine_key());
    EXPECT_EQ(s->matmul.vectors, mine->matmul.vectors);
    EXPECT_EQ(s->matmul.rows, mine->matmul.rows);
    EXPECT_EQ(s->rows.task_elems, mine->rows.task_elems);
    EXPECT_EQ(s->date.size(), 10u);
  }
  // The guard's mark (TunedSchedule::apart_ms) round-trips; entries without it have none.
  TunedSchedule marked = back.entries()[0];
  marked.apart_ms = 0.25;
  back.put(marked);
  back.save(path);
  ScheduleDb again = ScheduleDb::load(path, false);
  ASSERT_TRUE(again.find(marked.signature, "host", host_machine_key())->apart_ms.has_value());
  EXPECT_EQ(*again.find(marked.signature, "host", host_machine_key())->apart_ms, 0.25);
  if (again.entries().size() > 1) EXPECT_FALSE(again.entries()[1].apart_ms.has_value());
  // Used: every group compiles with its tuned parameters and computes the same outputs.
  TensorMap in{{"x", random({24, 40}, 3)}};
  Executable tuned = build_executable(g, plan, "gaf", {&back}), plain = build_executable(g, plan);
  EXPECT_EQ(tuned.stats.tuned_groups, static_cast<int>(plan.groups.size()));
  EXPECT_EQ(plain.stats.tuned_groups, 0);
  EXPECT_EQ(
      gaf::testing::compare_tensors(tuned.runner->run(in).at("out"), plain.runner->run(in).at("out"), {1e-5, 1e-6}),
      "");
  // Entries of another machine are not used.
  ScheduleDb other;
  TunedSchedule s = back.entries()[0];
  s.machine = "another machine";
  other.put(s);
  EXPECT_EQ(build_executable(g, plan, "gaf", {&other}).stats.tuned_groups, 0);
}

TEST(Tuner, InterruptKeepsProgressAndRerunResumes) {
  Graph g = small_graph();
  FusionPlan plan = plan_fusion(g, {});
  std::string path = scratch("interrupted.json");
  ScheduleDb db;
  tune::TuneOptions o;
  o.trials = 50;
  o.repeat = 2;
  o.mullapudi = false;
  std::atomic<bool> stop{false};
  // "Ctrl-C" after the second candidate of the first (heaviest) group.
  auto interrupt = [&](size_t, size_t, const std::string&, int trial, int, double) {
    if (trial >= 2) stop = true;
  };
  tune::tune_plan(g, plan, db, path, o, stop, interrupt);
  ScheduleDb saved = ScheduleDb::load(path, false);
  ASSERT_EQ(saved.entries().size(), 1u) << "the group in progress is kept, the others not started";
  EXPECT_EQ(saved.entries()[0].trials, 2);

  stop = false;
  o.trials = 2;
  auto again = tune::tune_plan(g, plan, saved, path, o, stop, no_progress);
  int resumed = 0;
  for (const auto& r : again) resumed += r.resumed;
  EXPECT_EQ(resumed, 1) << "the interrupted group already has its 2 trials";
  EXPECT_EQ(ScheduleDb::load(path, false).entries().size(), plan.groups.size());
}

TEST(ScheduleDbFile, CorruptOrMismatchedFilesAreClearErrors) {
  auto error_of = [](const std::string& text) {
    std::string p = scratch("bad.json");
    write(p, text);
    try {
      ScheduleDb::load(p, false);
    } catch (const GafError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{\"schema\": ").find("bad.json: not valid JSON"), std::string::npos);
  // Found by fuzz_schedule_db: a number beyond a double threw nlohmann's out_of_range uncaught.
  EXPECT_NE(error_of("{\"schema\": 2E000001200000000}").find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not a schedule database"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "graph-autofusion/schedules/9", "entries": []})").find("is not"), std::string::npos);
  std::string entry = R"({"schema": "graph-autofusion/schedules/1", "entries": [{"signature": "s", "target": "host",
      "machine": "m", "date": "2026-01-01", "default_ms": 1, "best_ms": 1, "trials": 1,
      "params": {"matmul": {"vectors": 3, "rows": 0, "k_unroll": 1}, "rows": {"task_elems": 4096}}}]})";
  EXPECT_NE(error_of(entry).find("entry 0: field 'params.matmul.rows' must be an integer"), std::string::npos);
  std::string apart = entry;
  apart.replace(apart.find("\"rows\": 0"), 9, "\"rows\": 4").replace(apart.find("\"trials\""), 0, "\"apart_ms\": -1, ");
  EXPECT_NE(error_of(apart).find("entry 0: field 'apart_ms' must be a number >= 0"), std::string::npos)
      << error_of(apart);
  EXPECT_NE(error_of(R"({"schema": "graph-autofusion/schedules/1", "entries": [{"target": "host"}]})")
                .find("entry 0: field 'signature' is missing"),
            std::string::npos);
  EXPECT_THROW(ScheduleDb::load(scratch("missing.json"), false), GafError);
  EXPECT_TRUE(ScheduleDb::load(scratch("missing.json"), true).entries().empty());
}

TEST(TuneCli, TunesOneLayerBertAndRunUsesTheDatabase) {
  std::string db = scratch("bert1.json");
  std::string tune_bin = (fs::path(GAF_BINARY).parent_path() / "gaf-tune").string();
  std::string model = "builtin:bert-base --layers 1 --seq 8";
  auto t = cli(tune_bin + " " + model + " --db " + db + " --trials 2 --repeat 2 --budget 2m --no-mullapudi");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("MatMul+GELU"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("saved " + db), std::string::npos) << t.out;
  // The guard timed the 6 fused groups fused and apart (at seq 8 some may lose by noise: then
  // they are marked, which the run below would show; the marks are cleared here for its counts).
  EXPECT_NE(t.out.find("guard: 6 fused groups timed fused and apart: "), std::string::npos) << t.out;
  nlohmann::json j = nlohmann::json::parse(read(db));
  for (auto& e : j["entries"]) e.erase("apart_ms");
  write(db, j.dump());
  auto r = cli(std::string(GAF_BINARY) + " run " + model + " --schedules " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("schedules: 6 of 6 groups use tuned parameters"), std::string::npos) << r.out;
  // The AOT compile reads the same database: its 7 distinct kernels all tuned.
  std::string aot_dir = gaf::testing::scratch_dir("tune_cli_aot");
  fs::remove_all(aot_dir);
  auto c = cli(std::string(GAF_BINARY) + " compile " + model + " -o " + aot_dir + " --schedules " + db);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("-> 6 kernels (6 tuned)"), std::string::npos) << c.out;
  // A group marked slower fused (the MatMul+GELU one) runs apart: its nodes are their own groups
  // (GAF-NF030), the other 5 groups keep their tuned parameters.
  for (auto& e : j["entries"])
    if (e["label"] == "MatMul+GELU") e["apart_ms"] = 0.001;
  write(db, j.dump());
  auto a = cli(std::string(GAF_BINARY) + " run " + model + " --schedules " + db);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out.find("schedules: 6 of 6 groups"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("schedules: 5 of "), std::string::npos) << a.out;

  auto npu = cli(tune_bin + " " + model + " --db " + db + " --npu-target x.json");
  EXPECT_EQ(npu.exit_code, 1);
  EXPECT_NE(npu.err.find("gaf-tune: error: --npu-target needs --target npu-tile"), std::string::npos) << npu.err;
  auto gpu = cli(tune_bin + " " + model + " --db " + db + " --target gpu");
  EXPECT_EQ(gpu.exit_code, 1);
  EXPECT_NE(gpu.err.find("--target"), std::string::npos) << gpu.err;
  auto budget = cli(tune_bin + " " + model + " --db " + db + " --budget soon");
  EXPECT_EQ(budget.exit_code, 1);
  EXPECT_NE(budget.err.find("--budget 'soon'"), std::string::npos) << budget.err;
  write(db, "not json");
  auto bad = cli(std::string(GAF_BINARY) + " run " + model + " --schedules " + db);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bert1.json: not valid JSON"), std::string::npos) << bad.err;
}

// A database that cannot be written must cost nothing: a missing folder is found before any
// tuning, a full disk (here a file size limit: writes fail with EFBIG as with ENOSPC) keeps the
// previous database and leaves no temporary, and the run fails instead of printing "saved".
TEST(TuneCli, DatabaseWritesAreCheckedAndAtomic) {
  std::string tune_bin = (fs::path(GAF_BINARY).parent_path() / "gaf-tune").string();
  std::string model = "builtin:bert-base --layers 1 --seq 8";
  auto t0 = std::chrono::steady_clock::now();
  auto missing = cli(tune_bin + " " + model + " --db " + scratch("no/such/folder/db.json") + " --trials 1");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_NE(missing.err.find("--db '"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("folder/db.json': folder '"), std::string::npos) << missing.err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0)
      << "checked before tuning";

  auto zero = cli(tune_bin + " " + model + " --db " + scratch("zero.json") + " --trials 0");
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_NE(zero.err.find("--trials"), std::string::npos) << zero.err;
  EXPECT_LT(zero.err.size(), 200u) << zero.err;

  std::string dir = gaf::testing::scratch_dir("tune_full_disk");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string db = dir + "/db.json";
  ScheduleDb previous;
  TunedSchedule s;
  s.signature = "kept";
  s.target = "host";
  s.machine = "m";
  s.date = "2026-01-01";
  previous.put(s);
  // Large enough that the new database (a kept entry plus six tuned groups) exceeds the limit.
  previous.save(db);
  const std::string before = gaf::testing::slurp(db);
  // The limit applies to every file the process writes, so its output goes through a pipe.
  // (In braces: cli() redirects the whole command line's stdin, stdout and stderr.)
  auto full = cli("{ (trap '' XFSZ; ulimit -f 1; " + tune_bin + " " + model + " --db " + db +
                  " --trials 1 --repeat 1 --budget 1m --no-mullapudi; echo \"exit=$?\") 2>&1 | cat; }");
  EXPECT_NE(full.out.find("exit=1"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("db.json: write failed (File too large)"), std::string::npos) << full.out;
  EXPECT_EQ(full.out.find("saved"), std::string::npos) << full.out;
  EXPECT_EQ(gaf::testing::slurp(db), before);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1) << "no temporary left behind";
}

// Ctrl-C keeps what was found, and the exit code says the run did not finish.
TEST(TuneCli, InterruptExitsNonZero) {
  std::string tune_bin = (fs::path(GAF_BINARY).parent_path() / "gaf-tune").string();
  std::string dir = gaf::testing::scratch_dir("tune_interrupt");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // SIGINT once the first group is being tuned (the handler is installed before that line).
  auto r = cli("{ cd " + dir + " && " + tune_bin +
               " builtin:bert-base --layers 1 --seq 8 --db db.json --budget 10m "
               "--trials 1000 --no-mullapudi > out.txt 2> err.txt & pid=$!; "
               "for i in $(seq 600); do grep -q 'group 1/' " +
               dir +
               "/err.txt 2>/dev/null && break; sleep 0.1; done; "
               "kill -INT $pid; wait $pid; echo \"exit=$?\"; cat " +
               dir + "/out.txt; }");
  EXPECT_NE(r.out.find("exit=130"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("interrupted: what was found so far is in db.json"), std::string::npos) << r.out;
}
