// gaf explain (a fused node, a node left alone, a node the planner rewrote, ambiguous and unknown
// names) and gaf verify (per-group errors, tolerance flags and exit code 3, bad options).
#include <regex>

#include "test/cli_util.h"

using namespace gaf::testing;

namespace {

std::string gaf_cmd(const std::string& args) { return gaf_binary() + " " + args; }
const std::string kSmall = "builtin:bert-base --layers 1 --seq 16";
const std::string kLayerNormNode = "encoder.layer.0/ffn/encoder.layer.0.output.LayerNorm/ReduceMean_57";

}  // namespace

TEST(CliExplain, FusedNodeGroupRuleAndDecision) {
  CommandResult r = run_command(gaf_cmd("explain " + kSmall + " --node " + kLayerNormNode), scratch_dir("cli_explain"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node '" + kLayerNormNode + "' (ReduceMean, reduction)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(
                "fused: group g5 MatMul+LayerNorm (kind matmul_epilogue, rule matmul_layernorm), 12 ops in one kernel"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  * ReduceMean  " + kLayerNormNode), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decision: '" + kLayerNormNode + "' is compute_at "), std::string::npos) << r.out;
}

TEST(CliExplain, UnfusedNodeListsRefusalsWithTheOtherNode) {
  // Without the attention rules the Softmax runs alone, refused by its neighbours' groups.
  CommandResult r = run_command(
      gaf_cmd("explain " + kSmall + " --disable-rule attention --disable-rule attention_scores --node Softmax_25"),
      scratch_dir("cli_explain"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node 'encoder.layer.0/attention/Softmax_25' (Softmax, reduction)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not fused: runs alone as group g3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refused merges involving it (2):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GAF-NF004 [generic] with 'encoder.layer.0/attention/MatMul_26' (in g4)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("GAF-NF004 [generic] with 'encoder.layer.0/attention/Add_24' (in g2)"), std::string::npos)
      << r.out;
}

TEST(CliExplain, SkippedNodeAndRewrittenNode) {
  std::string dir = scratch_dir("cli_explain");
  CommandResult skip = run_command(gaf_cmd("explain " + kSmall + " --skip Erf --node Erf"), dir);
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_NE(skip.out.find("not fused"), std::string::npos) << skip.out;
  EXPECT_NE(skip.out.find("GAF-NF020"), std::string::npos) << skip.out;
  CommandResult key = run_command(gaf_cmd("explain " + kSmall + " --node self.key/MatMul_11"), dir);
  ASSERT_EQ(key.exit_code, 0) << key.err;
  EXPECT_NE(key.out.find("before grouping: Rewrote horizontal MatMul:"), std::string::npos) << key.out;
  EXPECT_NE(key.out.find("its work is now done by "
                         "'encoder.layer.0/attention/encoder.layer.0.attention.self.query/MatMul_6/horizontal/MatMul'"),
            std::string::npos)
      << key.out;
  EXPECT_NE(key.out.find("fused: group g1 MatMul x3 (horizontal)"), std::string::npos) << key.out;
}

TEST(CliExplain, UnknownAndAmbiguousNamesAreOneLineErrors) {
  std::string dir = scratch_dir("cli_explain");
  CommandResult none = run_command(gaf_cmd("explain " + kSmall + " --node NoSuchNode"), dir);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err_lines(), 1) << none.err;
  EXPECT_NE(none.err.find("--node 'NoSuchNode': no node has that name"), std::string::npos) << none.err;
  CommandResult many = run_command(gaf_cmd("explain " + kSmall + " --node LayerNorm"), dir);
  EXPECT_EQ(many.exit_code, 1);
  EXPECT_EQ(many.err_lines(), 1) << many.err;
  EXPECT_NE(many.err.find("--node 'LayerNorm' matches 18 nodes"), std::string::npos) << many.err;
  CommandResult missing = run_command(gaf_cmd("explain " + kSmall), dir);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--node is required"), std::string::npos) << missing.err;
}

TEST(CliVerify, EveryGroupWithinDefaultTolerance) {
  CommandResult r = run_command(gaf_cmd("verify " + kSmall), scratch_dir("cli_verify"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("inputs: generated (seed 0): float32 N(0,1)"), std::string::npos) << r.out;
  // One row per group (7) with max abs, max rel and ULPs, plus the whole-model row.
  std::regex row(R"(\n  g(\d+) +(\S+) +.*? +(\d+) +(\S+) +(\S+) +(\S+)  ok)");
  int rows = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), row); it != std::sregex_iterator(); ++it) {
    ++rows;
    EXPECT_LE(std::stod((*it)[4]), 1e-4) << (*it)[0];
  }
  EXPECT_EQ(rows, 6) << r.out;
  EXPECT_NE(r.out.find("  output -                 last_hidden_state"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify: 6 groups checked, 0 above tolerance; 1 outputs, 0 above tolerance"), std::string::npos)
      << r.out;
}

TEST(CliVerify, ZeroToleranceFlagsExactlyTheGroupsThatDiffer) {
  CommandResult r =
      run_command(gaf_cmd("verify " + kSmall + " --range=-2,2 --rtol 0 --atol 0"), scratch_dir("cli_verify"));
  EXPECT_NE(r.out.find("float32 uniform in [-2, 2]"), std::string::npos) << r.out;
  std::regex row(R"(\n  g\d+ .*? (\S+) +(\S+) +(\S+)  (ok|ABOVE TOLERANCE))");
  int rows = 0, above = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), row); it != std::sregex_iterator(); ++it) {
    ++rows;
    bool differs = std::stod((*it)[1]) > 0;
    bool flagged = (*it)[4] == "ABOVE TOLERANCE";
    EXPECT_EQ(differs, flagged) << (*it)[0];
    above += flagged;
  }
  EXPECT_EQ(rows, 6) << r.out;
  EXPECT_EQ(r.exit_code, above ? 3 : 0) << r.out << r.err;
}

TEST(CliVerify, BadOptionsAreOneLineErrors) {
  std::string dir = scratch_dir("cli_verify");
  CommandResult range = run_command(gaf_cmd("verify " + kSmall + " --range=2,1"), dir);
  EXPECT_EQ(range.exit_code, 1);
  EXPECT_EQ(range.err_lines(), 1) << range.err;
  EXPECT_NE(range.err.find("--range: expected LO,HI with LO < HI"), std::string::npos) << range.err;
  CommandResult input = run_command(gaf_cmd("verify " + kSmall + " --input hidden_states=/nonexistent.npy"), dir);
  EXPECT_EQ(input.exit_code, 1);
  EXPECT_EQ(input.err_lines(), 1) << input.err;
  EXPECT_NE(input.err.find("/nonexistent.npy"), std::string::npos) << input.err;
}

TEST(CliVerify, InputsFromFiles) {
  std::string dir = scratch_dir("cli_verify_inputs");
  std::filesystem::create_directories(dir);
  CommandResult gen = run_command(std::string(python()) +
                                      " -c \"import numpy as np; r = np.random.default_rng(3); "
                                      "np.save('" +
                                      dir +
                                      "/h.npy', r.uniform(-3, 3, (1, 16, 768)).astype('float32')); "
                                      "np.save('" +
                                      dir + "/m.npy', np.ones((1, 16), 'float32'))\"",
                                  dir);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  CommandResult r = run_command(
      gaf_cmd("verify " + kSmall + " --input hidden_states=" + dir + "/h.npy --input attention_mask=" + dir + "/m.npy"),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("inputs: from --input files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify: 6 groups checked, 0 above tolerance"), std::string::npos) << r.out;
  CommandResult both = run_command(gaf_cmd("verify " + kSmall + " --input hidden_states=" + dir +
                                           "/h.npy --input attention_mask=" + dir + "/m.npy --range=0,1"),
                                   dir);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("--range applies to generated inputs"), std::string::npos) << both.err;
}
