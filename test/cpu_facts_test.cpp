// CPU facts (runtime/cpu_facts.h) agree with what the kernel says in /proc/cpuinfo, and `gaf info`
// prints them, alone or after a model.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "runtime/cpu_facts.h"
#include "test/cli_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

std::set<std::string> cpuinfo_flags() {
  std::ifstream f("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(f, line);)
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  return flags;
}

}  // namespace

TEST(CpuFacts, AgreeWithProcCpuinfo) {
  const std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const CpuFacts& c = cpu_facts();
  EXPECT_EQ(c.avx2, flags.count("avx2") > 0);
  EXPECT_EQ(c.fma, flags.count("fma") > 0);
  EXPECT_EQ(c.avx512f, flags.count("avx512f") > 0);
  EXPECT_EQ(c.avx512_bf16, flags.count("avx512_bf16") > 0);
  EXPECT_EQ(c.avx512_fp16, flags.count("avx512_fp16") > 0);
  EXPECT_EQ(c.avx512_vnni, flags.count("avx512_vnni") > 0);
  EXPECT_EQ(c.amx_bf16, flags.count("amx_bf16") > 0);
  EXPECT_EQ(c.amx_int8, flags.count("amx_int8") > 0);
  EXPECT_GT(c.logical_cpus, 0);
  EXPECT_FALSE(c.name.empty());
  EXPECT_GT(c.l2, 0) << "no L2 size under /sys/devices/system/cpu/cpu0/cache nor from CPUID";
  EXPECT_GE(c.l2, c.l1d);
}

TEST(CpuFacts, GafInfoPrintsThem) {
  CommandResult alone = run_command(gaf_binary() + " info", scratch_dir("cpu_facts"));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.out.find("cpu:\n  name: " + cpu_facts().name), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("features: " + cpu_facts().feature_list()), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("bf16 dot products: " + std::string(cpu_facts().avx512_bf16 ? "yes" : "no")),
            std::string::npos)
      << alone.out;
  CommandResult model =
      run_command(gaf_binary() + " info builtin:bert-base --layers 1 --seq 8", scratch_dir("cpu_facts"));
  ASSERT_EQ(model.exit_code, 0) << model.err;
  EXPECT_NE(model.out.find("weights: "), std::string::npos) << model.out;
  EXPECT_NE(model.out.find("cpu:\n  name: "), std::string::npos) << model.out;
}
