// What every gaf subcommand shares: --help, the model naming, -v/-q and GAF_LOG_LEVEL (debug shows
// the planner's decisions), --threads (Halide's thread pool really has that many threads), and
// the exit codes.
#include "test/cli_util.h"

using namespace gaf::testing;

namespace {
std::string gaf_cmd(const std::string& args) { return gaf_binary() + " " + args; }
const std::string kSmall = "builtin:bert-base --layers 1 --seq 16";
}  // namespace

TEST(CliCommon, EverySubcommandHasHelpWithTheSharedOptions) {
  std::string dir = scratch_dir("cli_common");
  for (const char* sub : {"info", "plan", "run", "report", "explain", "verify"}) {
    CommandResult r = run_command(gaf_cmd(std::string(sub) + " --help"), dir);
    EXPECT_EQ(r.exit_code, 0) << sub;
    for (const char* opt : {"model", "--layers", "--dim", "-v,--verbose", "-q,--quiet", "--threads"})
      EXPECT_NE(r.out.find(opt), std::string::npos) << sub << " --help lacks " << opt << "\n" << r.out;
    if (std::string(sub) != "info")
      for (const char* opt : {"--no-fusion", "--disable-kind", "--disable-rule", "--skip", "--max-group-size"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << sub << " --help lacks " << opt;
  }
  CommandResult top = run_command(gaf_cmd("--help"), dir);
  EXPECT_EQ(top.exit_code, 0);
  for (const char* sub : {"info", "plan", "run", "report", "explain", "verify"})
    EXPECT_NE(top.out.find(sub), std::string::npos) << sub;
  EXPECT_NE(top.out.find("Exit codes: 0 ok, 1 user error"), std::string::npos) << top.out;
}

TEST(CliCommon, LogLevels) {
  std::string dir = scratch_dir("cli_common");
  CommandResult quiet = run_command(gaf_cmd("plan " + kSmall), dir);
  ASSERT_EQ(quiet.exit_code, 0);
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;  // default: warnings and errors only
  CommandResult debug = run_command(gaf_cmd("plan " + kSmall + " -vv"), dir);
  ASSERT_EQ(debug.exit_code, 0);
  EXPECT_NE(debug.err.find("gaf: debug: planner: rule matmul_layernorm grouped "), std::string::npos) << debug.err;
  EXPECT_NE(debug.err.find("gaf: debug: planner: refused GAF-NF004 [generic]"), std::string::npos);
  EXPECT_NE(debug.err.find("gaf: debug: planner: generic: fusing "), std::string::npos);
  EXPECT_NE(debug.err.find("gaf: debug: planner: g4 (matmul_epilogue): '"), std::string::npos);  // Func decisions
  CommandResult env = run_command("GAF_LOG_LEVEL=debug " + gaf_cmd("plan " + kSmall), dir);
  EXPECT_NE(env.err.find("gaf: debug: planner:"), std::string::npos);
  CommandResult q = run_command("GAF_LOG_LEVEL=debug " + gaf_cmd("plan " + kSmall + " -q"), dir);
  EXPECT_TRUE(q.err.empty()) << q.err;
  CommandResult bad = run_command("GAF_LOG_LEVEL=loud " + gaf_cmd("plan " + kSmall), dir);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err_lines(), 1);
  EXPECT_NE(bad.err.find("GAF_LOG_LEVEL: unknown level 'loud' (valid: error, warn, info, debug)"), std::string::npos)
      << bad.err;
}

TEST(CliCommon, ProgressIsPlainLinesOffATerminal) {
  CommandResult r = run_command(gaf_cmd("run " + kSmall + " -v"), scratch_dir("cli_common"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("gaf: info: compiling groups 1/6: g0 elementwise\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gaf: info: compiling groups 6/6: g5 MatMul+LayerNorm\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
}

TEST(CliCommon, ThreadsSizeHalidesThreadPool) {
  std::string dir = scratch_dir("cli_common");
  for (int t : {1, 3}) {
    CommandResult r = run_command(gaf_cmd("run " + kSmall + " --threads " + std::to_string(t) + " -v"), dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Counted in /proc/self/task after the kernels ran: the caller plus the pool's workers.
    EXPECT_NE(r.err.find("threads: this process ran with " + std::to_string(t) + " threads"), std::string::npos)
        << r.err;
  }
  CommandResult bad = run_command(gaf_cmd("verify " + kSmall + " --threads -2"), dir);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
}

TEST(CliCommon, ExitCodes) {
  std::string dir = scratch_dir("cli_common");
  EXPECT_EQ(run_command(gaf_cmd("info " + kSmall), dir).exit_code, 0);
  EXPECT_EQ(run_command(gaf_cmd("frobnicate"), dir).exit_code, 1);         // unknown subcommand
  EXPECT_EQ(run_command(gaf_cmd("plan builtin:nope"), dir).exit_code, 1);  // unknown model
  EXPECT_EQ(run_command(gaf_cmd("plan " + kSmall + " --max-group-size x"), dir).exit_code, 1);
}

TEST(CliCommon, ProgressIsABarOnATerminal) {
  if (!std::filesystem::exists("/usr/bin/script")) GTEST_SKIP() << "util-linux 'script' (a pseudo-terminal) is absent";
  // script runs gaf on a pseudo-terminal: stderr is a TTY, so the bar is redrawn in place.
  CommandResult r = run_command("/usr/bin/script -qec '" + gaf_cmd("run " + kSmall) + " > /dev/null' /dev/null",
                                scratch_dir("cli_common"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\r\033[Kcompiling groups ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[##############################] 6/6"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("gaf: info:"), std::string::npos) << r.out;
}
