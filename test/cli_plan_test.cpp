// gaf plan / gaf run from the command line: the log lines, JSON and DOT outputs, the controls
// (CLI and GAF_FUSION), and their errors.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "test/cli_util.h"

using namespace gaf::testing;

namespace {
std::string gaf_cmd(const std::string& args) { return gaf_binary() + " " + args; }
}  // namespace

TEST(CliPlan, LogLinesJsonAndDot) {
  std::string dir = scratch_dir("cli_plan");
  std::filesystem::create_directories(dir);
  CommandResult r = run_command(
      gaf_cmd("plan builtin:bert-base --layers 1 --seq 16 --json " + dir + "/plan.json --dot " + dir + "/plan.dot"),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[GRAPH_AUTOFUSION] Detected 2 MatMul+LayerNorm fusion opportunities"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[GRAPH_AUTOFUSION] Detected 1 MatMul+GELU fusion opportunity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[GRAPH_AUTOFUSION] Applied "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fusions by kind:"), std::string::npos);
  auto j = nlohmann::json::parse(slurp(dir + "/plan.json"));
  EXPECT_EQ(j["schema"], "graph-autofusion/plan/1");
  int norm = 0;
  for (const auto& g : j["groups"]) {
    EXPECT_FALSE(g["signature"].get<std::string>().empty());
    EXPECT_GE(g["bytes_unfused"].get<int64_t>(), g["bytes_fused"].get<int64_t>());
    norm += g["kind"] == "matmul_epilogue" && g["label"] == "MatMul+LayerNorm" && g["rule"] == "matmul_layernorm";
  }
  EXPECT_EQ(norm, 2);  // each LayerNorm with the projection and residual before it
  // Totals count fusions (groups of 2+ ops): attention, FFN1+GELU, the two projections+LayerNorm.
  EXPECT_EQ(j["totals"]["matmul_epilogue"]["count"], 4);
  EXPECT_FALSE(j["totals"].contains("normalization"));
  std::string dot = slurp(dir + "/plan.dot");
  EXPECT_NE(dot.find("subgraph cluster_g"), std::string::npos);
  EXPECT_NE(dot.find("digraph fusion"), std::string::npos);
}

TEST(CliPlan, ControlsFromEnvironmentAndFlags) {
  std::string dir = scratch_dir("cli_plan_env");
  CommandResult off = run_command("GAF_FUSION='disable-kind=normalization;disable-rule=matmul_layernorm' " +
                                      gaf_cmd("plan builtin:bert-base --layers 1 --seq 16"),
                                  dir);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find("LayerNorm fusion"), std::string::npos) << off.out;

  CommandResult bad =
      run_command("GAF_FUSION='disable-kind=vertical' " + gaf_cmd("plan builtin:bert-base --layers 1"), dir);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
  EXPECT_NE(bad.err.find("GAF_FUSION: unknown fusion kind 'vertical' (valid: elementwise"), std::string::npos)
      << bad.err;

  CommandResult rule = run_command(gaf_cmd("plan builtin:bert-base --layers 1 --disable-rule nope"), dir);
  EXPECT_EQ(rule.exit_code, 1);
  EXPECT_NE(rule.err.find("unknown fusion rule 'nope' (valid: "), std::string::npos) << rule.err;
}

// With --profile, the time per group and, beside it, the profiled forward and the groups' sum.
TEST(CliRun, FusedAgainstUnfusedBaseline) {
  CommandResult r =
      run_command(gaf_cmd("run builtin:bert-base --layers 1 --seq 16 --compare --profile"), scratch_dir("cli_run"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("forward (fused): median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; the profiled forward "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms, its groups' medians sum to "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forward (unfused baseline"), std::string::npos) << r.out;
  size_t at = r.out.find("max relative difference ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LE(std::stod(r.out.substr(at + 24)), 1e-5) << r.out;
}

// --check-fusion times each group fused and apart before running and says what it found; with
// --compare the run goes on from the same loaded model.
TEST(CliRun, CheckFusionTimesGroupsFirst) {
  CommandResult r = run_command(gaf_cmd("run builtin:bert-base --layers 1 --seq 16 --check-fusion --compare"),
                                scratch_dir("cli_run_check"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("check-fusion: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("groups timed fused and apart (median of 5 runs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forward (fused): median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forward (unfused baseline"), std::string::npos) << r.out;
}

// The default output fits on a screen: one rewrite line per kind, repeated layers folded into one
// line; --groups lists everything.
TEST(CliPlan, DefaultOutputFoldsRepeatedLayersAndGroupsListsThem) {
  std::string dir = scratch_dir("cli_plan_fold");
  std::filesystem::create_directories(dir);
  CommandResult r = run_command(gaf_cmd("plan builtin:bert-base --layers 4 --seq 16"), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Rewrote horizontal MatMul: 3 more like it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("more blocks like g"), std::string::npos) << r.out;
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 45) << r.out;
  CommandResult all = run_command(gaf_cmd("plan builtin:bert-base --layers 4 --seq 16 --groups"), dir);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out.find("more like it"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("more blocks like"), std::string::npos) << all.out;
  // Rewrites in graph order: layer 0, 1, 2, 3.
  const size_t l1 = all.out.find("encoder.layer.1/attention"), l2 = all.out.find("encoder.layer.2/attention");
  EXPECT_LT(l1, l2);
}

// --output-dir creates the folder (and its parents) when it does not exist.
TEST(CliPlan, OutputDirIsCreated) {
  std::string dir = scratch_dir("cli_run_outdir");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CommandResult r =
      run_command(gaf_cmd("run builtin:bert-base --layers 1 --seq 8 --output-dir " + dir + "/new/sub"), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/new/sub/last_hidden_state.npy")) << r.out;
}
