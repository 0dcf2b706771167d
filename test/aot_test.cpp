// AOT: gaf compile (library, header, plan file, weights file; errors leave nothing behind), the
// memory plan's validity, and bert_infer — the AOT-compiled builtin:bert-base linked with the plan
// runtime only — against the JIT path (gaf run) on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_util.h"
#include "generators/reference_executor.h"
#include "runtime/cpu_facts.h"
#include "runtime/tensor_io.h"

namespace gaf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace gaf::testing;

const std::string kBertArgs = "--layers " + std::to_string(BERT_LAYERS) + " --seq " + std::to_string(BERT_SEQ);

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Compiled once for the tests that read the outputs: 2 layers, seq 16.
class GafCompile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch_dir("aot_compile/out");
    fs::remove_all(dir_);
    result_ = run_command(gaf_binary() + " compile builtin:bert-base --layers 2 --seq 16 -o " + dir_ + " --name tiny",
                          scratch_dir("aot_compile"));
  }
  static json plan() { return json::parse(slurp(dir_ + "/tiny.plan.json")); }
  static std::string dir_;
  static CommandResult result_;
};
std::string GafCompile::dir_;
CommandResult GafCompile::result_;

TEST_F(GafCompile, WritesLibraryHeaderPlanAndWeightsOnly) {
  ASSERT_EQ(result_.exit_code, 0) << result_.err;
  EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"tiny.a", "tiny.h", "tiny.plan.json", "tiny.weights"}));
  EXPECT_NE(result_.out.find("compiled: 11 groups -> "), std::string::npos) << result_.out;
}

TEST_F(GafCompile, IdenticalSignaturesCompileOnceAndEveryKernelIsInTheLibraryAndHeader) {
  ASSERT_EQ(result_.exit_code, 0) << result_.err;
  json p = plan();
  EXPECT_EQ(p["schema"], "graph-autofusion/aot-plan/1");
  ASSERT_EQ(p["groups"].size(), 11u);
  std::set<std::string> fns, used, signatures;
  for (const json& k : p["kernels"]) {
    fns.insert(k["function"].get<std::string>());
    EXPECT_TRUE(signatures.insert(k["signature"].get<std::string>()).second) << "signature compiled twice";
  }
  for (const json& g : p["groups"]) used.insert(g["kernel"].get<std::string>());
  EXPECT_EQ(used, fns);
  EXPECT_LT(fns.size(), 12u);  // the second layer reuses the first layer's kernels
  std::string header = slurp(dir_ + "/tiny.h");
  CommandResult nm = run_command("nm -g --defined-only " + dir_ + "/tiny.a", scratch_dir("aot_compile/nm"));
  ASSERT_EQ(nm.exit_code, 0) << nm.err;
  for (const std::string& fn : fns) {
    EXPECT_NE(header.find("{\"" + fn + "\", " + fn + "_argv}"), std::string::npos) << fn;
    EXPECT_NE(nm.out.find(" T " + fn + "_argv\n"), std::string::npos) << fn;
  }
  EXPECT_NE(nm.out.find(" halide_do_par_for"), std::string::npos) << "the Halide runtime is in the library";
}

TEST_F(GafCompile, ArenaOffsetsNeverOverlapWhileLiveAndPeakIsAtLeastTheLowerBound) {
  ASSERT_EQ(result_.exit_code, 0) << result_.err;
  json p = plan();
  int64_t arena = p["arena"]["bytes"], lower = p["arena"]["lower_bound"];
  const json& bufs = p["buffers"];
  std::vector<int64_t> live(p["groups"].size(), 0);
  int64_t sum = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    int64_t off = bufs[i]["offset"], bytes = bufs[i]["bytes"];
    int f = bufs[i]["live"][0], l = bufs[i]["live"][1];
    EXPECT_EQ(off % 64, 0);
    EXPECT_LE(off + bytes, arena);
    sum += bytes;
    for (int s = f; s <= l; ++s) live[s] += (bytes + 63) / 64 * 64;
    for (size_t j = 0; j < i; ++j) {
      int64_t o2 = bufs[j]["offset"], b2 = bufs[j]["bytes"];
      int f2 = bufs[j]["live"][0], l2 = bufs[j]["live"][1];
      bool same_time = f <= l2 && f2 <= l;
      bool same_bytes = off < o2 + b2 && o2 < off + bytes;
      EXPECT_FALSE(same_time && same_bytes) << bufs[i]["name"] << " and " << bufs[j]["name"];
    }
  }
  EXPECT_EQ(lower, *std::max_element(live.begin(), live.end()));
  EXPECT_GE(arena, lower);
  EXPECT_LT(arena, sum) << "buffers are reused";
}

TEST_F(GafCompile, WeightsFileHoldsEveryConstantAtItsOffset) {
  ASSERT_EQ(result_.exit_code, 0) << result_.err;
  json p = plan();
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir_ + "/tiny.weights")), p["weights_bytes"].get<int64_t>());
  std::set<std::string> weights, inputs, buffers;
  int64_t end = 0;
  for (const json& w : p["weights"]) {
    weights.insert(w["name"].get<std::string>());
    EXPECT_GE(w["offset"].get<int64_t>(), end);  // in order, no overlap
    end = w["offset"].get<int64_t>() + w["bytes"].get<int64_t>();
  }
  EXPECT_EQ(end, p["weights_bytes"].get<int64_t>());
  for (const json& i : p["inputs"]) inputs.insert(i["name"].get<std::string>());
  for (const json& b : p["buffers"]) buffers.insert(b["name"].get<std::string>());
  for (const json& g : p["groups"])
    for (const json& in : g["inputs"]) {
      std::string v = in;
      EXPECT_EQ(weights.count(v) + inputs.count(v) + buffers.count(v), 1u) << v << " needs exactly one storage";
    }
}

TEST(GafCompileErrors, OneLineExitOneAndNothingLeftBehind) {
  std::string dir = scratch_dir("aot_errors/out");
  fs::remove_all(dir);
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"builtin:bert-base --layers 1 --seq 8 --name 1bad", "library name '1bad'"},
      {"builtin:bert-base --layers 1 --seq 8 --target npu-tile --npu-target missing_npu.json", "missing_npu.json"},
      {"builtin:bert-base --layers 1 --seq 8 --npu-target missing_npu.json", "--npu-target needs --target npu-tile"},
      {"builtin:bert-base --layers 1 --seq 8 --target npu-tile --halide-target host,x86-64-linux-avx2",
       "an npu-tile library is compiled for one host target"},
      {"builtin:bert-base --layers 1 --seq 8 --target gpu", "--target 'gpu'"},
      {"builtin:bert-base --layers 1 --seq 8 --halide-target x86-64-nonsense", "x86-64-nonsense"},
      {"builtin:bert-base --layers 1 --seq 8 --halide-target host,arm-64-linux", "'arm-64-linux': only x86-64 Linux"},
      {"builtin:bert-base --layers 1 --seq 8 --halide-target host,", "--halide-target '' is not"},
      {"missing_model.onnx", "missing_model.onnx"},
      {"builtin:bert-base --layers 1 --seq 8 --schedules missing_db.json", "missing_db.json"},
  };
  for (const Case& c : cases) {
    CommandResult r = run_command(gaf_binary() + " compile " + c.args + " -o " + dir, scratch_dir("aot_errors"));
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err_lines(), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(files_in(dir).empty()) << c.args << ": left " << files_in(dir).size() << " files";
  }
  // A failure after the kernels are compiled (an output path is a folder): nothing of this run
  // left behind either, not even the temporary folder.
  fs::create_directories(dir + "/x.h/keep");
  CommandResult r = run_command(gaf_binary() + " compile builtin:bert-base --layers 1 --seq 8 --name x -o " + dir,
                                scratch_dir("aot_errors"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1) << r.err;
  EXPECT_NE(r.err.find("x.h': it is a folder"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"x.h"});
}

// ---- bert_infer ---------------------------------------------------------------------------------

TEST(BertInfer, LinksNoHalideCompiler) {
  CommandResult r = run_command("ldd " + std::string(BERT_INFER), scratch_dir("bert_infer_ldd"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("libHalide"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libc.so"), std::string::npos) << r.out;  // ldd did list the libraries
  CommandResult nm = run_command("nm -C " + std::string(BERT_INFER), scratch_dir("bert_infer_ldd"));
  EXPECT_EQ(nm.out.find("Halide::Pipeline"), std::string::npos);
  EXPECT_EQ(nm.out.find("Halide::Internal::"), std::string::npos);
}

// Inputs written as DIR/<input>.npy: hidden states N(0,1), a mask with the last quarter of positions
// off. Returns the --input options naming them.
std::string write_inputs(const std::string& dir, int64_t seq, int64_t width) {
  fs::create_directories(dir);
  Tensor h(DType::Float32, {1, seq, 768});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < h.numel(); ++i) h.data<float>()[i] = normal(rng);
  Tensor m(DType::Float32, {1, seq});
  for (int64_t i = 0; i < seq; ++i) m.data<float>()[i] = i < seq * 3 / 4 ? 1.0f : 0.0f;
  (void)width;
  write_npy(dir + "/hidden_states.npy", h);
  write_npy(dir + "/attention_mask.npy", m);
  return " --input hidden_states=" + dir + "/hidden_states.npy --input attention_mask=" + dir + "/attention_mask.npy";
}

TEST(BertInfer, MatchesTheJitPathWithin1e6Relative) {
  std::string dir = scratch_dir("bert_infer_match");
  fs::remove_all(dir);
  std::string inputs = write_inputs(dir + "/in", BERT_SEQ, 768);
  fs::create_directories(dir + "/jit");
  fs::create_directories(dir + "/aot");
  CommandResult jit =
      run_command(gaf_binary() + " run builtin:bert-base " + kBertArgs + inputs + " --output-dir " + dir + "/jit", dir);
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  CommandResult aot =
      run_command(std::string(BERT_INFER) + inputs + " --repeat 1 --profile --output-dir " + dir + "/aot", dir);
  ASSERT_EQ(aot.exit_code, 0) << aot.err;
  EXPECT_NE(aot.out.find("forward (AOT): median"), std::string::npos) << aot.out;
  EXPECT_NE(aot.out.find("profile (one run)"), std::string::npos) << aot.out;
  TensorMap a{{"o", read_npy(dir + "/aot/last_hidden_state.npy")}};
  TensorMap j{{"o", read_npy(dir + "/jit/last_hidden_state.npy")}};
  ASSERT_EQ(a["o"].shape(), (Shape{1, BERT_SEQ, 768}));
  double d = max_rel_diff(a, j);
  EXPECT_LE(d, 1e-6);
  double abs_sum = 0;
  for (int64_t i = 0; i < a["o"].numel(); ++i) abs_sum += std::fabs(a["o"].data<float>()[i]);
  EXPECT_GT(abs_sum, 0.1 * a["o"].numel()) << "the output is not all zeros";
}

TEST(BertInfer, InputErrorsNameTheTensor) {
  std::string dir = scratch_dir("bert_infer_errors");
  fs::remove_all(dir);
  write_inputs(dir, BERT_SEQ + 1, 768);  // wrong sequence length
  std::string m_ok = dir + "/m_ok.npy";
  write_npy(m_ok, Tensor(DType::Float32, {1, BERT_SEQ}));
  struct Case {
    std::string args, expect;
  } cases[] = {
      {" --input hidden_states=" + dir + "/hidden_states.npy --input attention_mask=" + m_ok,
       "input 'hidden_states': shape [1,"},
      {" --input attention_mask=" + m_ok, "input 'hidden_states' is missing"},
      {" --input bogus=" + m_ok, "input 'bogus' is not an input"},
      {" --plan " + dir + "/none.plan.json", "none.plan.json"},
      // Directories named as files: one line, not an uncaught exception.
      {" --plan " + dir, "is a directory, expected a plan file"},
      {" --input hidden_states=" + dir + " --input attention_mask=" + m_ok, "is a directory, expected a .npy file"},
      // A folder that cannot be created (its parent is a file); a missing one is created.
      {" --output-dir " + dir + "/hidden_states.npy/out", "--output-dir '"},
  };
  for (const Case& c : cases) {
    CommandResult r = run_command(std::string(BERT_INFER) + c.args, dir);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err_lines(), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

// PlanRunner checks the plan before anything runs: its schema, its buffers and slots, the weights
// file, and its kernel table hash against the library's. Each refusal is one line naming the
// file and the field; exit code 1, never an abort inside a kernel.
TEST(BertInfer, CorruptPlanOrWeightsNameTheFileAndField) {
  std::string dir = scratch_dir("bert_infer_corrupt");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string plan_file = BERT_PLAN_FILE;
  json p = json::parse(slurp(plan_file));
  std::string weights = (fs::path(plan_file).parent_path() / p["weights_file"].get<std::string>()).string();
  fs::create_symlink(weights, dir + "/" + p["weights_file"].get<std::string>());
  auto write = [&](const std::string& name, const json& q) { std::ofstream(dir + "/" + name) << q.dump(); };
  {  // a kernel missing from the plan's kernels
    json q = p;
    q["groups"][0]["kernel"] = "nope_k9";
    write("k.plan.json", q);
  }
  {  // a field missing
    json q = p;
    q["arena"].erase("lower_bound");
    write("f.plan.json", q);
  }
  {  // weights file of the wrong size
    json q = p;
    q["weights_file"] = "short.weights";
    write("w.plan.json", q);
    std::ofstream(dir + "/short.weights") << "abc";
  }
  {  // another schema
    json q = p;
    q["schema"] = "graph-autofusion/aot-plan/0";
    write("s.plan.json", q);
  }
  {  // a buffer's shape edited: its bytes no longer match
    json q = p;
    q["buffers"][0]["shape"][0] = 7;
    write("b.plan.json", q);
  }
  {  // an input's shape edited (another sequence length): the kernels were compiled for the old one
    json q = p;
    q["inputs"][0]["shape"][1] = BERT_SEQ * 2;
    write("i.plan.json", q);
  }
  {  // a weight moved outside the weights file
    json q = p;
    q["weights"][0]["offset"] = q["weights_bytes"].get<int64_t>();
    write("o.plan.json", q);
  }
  struct Case {
    std::string plan, expect;
  } cases[] = {
      {dir + "/k.plan.json", "field 'groups[0].kernel': 'nope_k9' is not in the plan's kernels"},
      {dir + "/f.plan.json", "field 'arena.lower_bound': missing"},
      {dir + "/w.plan.json", "short.weights: 3 bytes"},
      {dir + "/s.plan.json", "field 'schema': 'graph-autofusion/aot-plan/0', expected graph-autofusion/aot-plan/1"},
      {dir + "/b.plan.json", "field 'buffers[0].bytes'"},
      {dir + "/i.plan.json", "field 'kernel_table_hash'"},
      {dir + "/o.plan.json", "field 'weights[0].offset'"},
      // a plan of another model (1 layer, seq 16, library bert_mt) with bert_infer's library
      {BERT_MT_PLAN_FILE, "the kernel library's is"},
  };
  for (const Case& c : cases) {
    CommandResult r = run_command(std::string(BERT_INFER) + " --plan " + c.plan, dir);
    EXPECT_EQ(r.exit_code, 1) << c.plan << "\n" << r.err;
    EXPECT_EQ(r.err_lines(), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.plan << "\n" << r.err;
  }
}

}  // namespace
}  // namespace gaf

namespace gaf {
namespace {

// examples/aot_onnx configured out of tree with find_package(gaf) (-Dgaf_DIR=this build), on a
// small ONNX model: gaf_add_fused_library compiles it at build time, the app links it and the
// plan runtime only, and its output equals gaf run's.
TEST(ExampleProject, FindPackageGafAddFusedLibraryBuildsAndMatchesJit) {
  std::string dir = scratch_dir("aot_onnx_example");
  fs::remove_all(dir);
  auto step = [&](const std::string& what, const std::string& cmd) {
    CommandResult r = run_command(cmd, dir + "/log");
    EXPECT_EQ(r.exit_code, 0) << what << ": " << cmd << "\n" << r.out << r.err;
    return r;
  };
  if (step("model", std::string(python()) + " " + source_dir() + "/test/models/make_tiny_mlp.py " + dir).exit_code)
    return;
  if (step("configure", "cmake -S " + source_dir() + "/examples/aot_onnx -B " + dir +
                            "/build -DCMAKE_BUILD_TYPE=Release" + " -DCMAKE_CXX_COMPILER=" + CXX_COMPILER +
                            " -Dgaf_DIR=" + GAF_BUILD_DIR + " -DMODEL=" + dir + "/tiny_mlp.onnx")
          .exit_code)
    return;
  CommandResult b = step("build", "cmake --build " + dir + "/build");
  if (b.exit_code) return;
  EXPECT_NE(b.out.find("gaf compile"), std::string::npos) << b.out;
  fs::create_directories(dir + "/aot");
  fs::create_directories(dir + "/jit");
  CommandResult a = step("run", dir + "/build/aot_onnx " + dir + "/in " + dir + "/aot");
  EXPECT_NE(a.out.find("aot_onnx: "), std::string::npos) << a.out;
  step("jit",
       gaf_binary() + " run " + dir + "/tiny_mlp.onnx --input x=" + dir + "/in/x.npy --output-dir " + dir + "/jit");
  CommandResult l = step("ldd", "ldd " + dir + "/build/aot_onnx");
  EXPECT_EQ(l.out.find("libHalide"), std::string::npos) << l.out;
  TensorMap x{{"y", read_npy(dir + "/aot/y.npy")}}, y{{"y", read_npy(dir + "/jit/y.npy")}};
  ASSERT_EQ(x["y"].shape(), (Shape{2, 8, 16}));
  EXPECT_LE(max_rel_diff(x, y), 1e-6);
  double row = 0;  // softmax rows sum to 1: the kernels did run
  for (int i = 0; i < 16; ++i) row += x["y"].data<float>()[i];
  EXPECT_NEAR(row, 1.0, 1e-5);
}

}  // namespace
}  // namespace gaf

namespace gaf {
namespace {

// bert_mt: kernels for AVX-512 (16 lanes) and AVX2 (8 lanes, other tiles) in one library, Halide's
// wrapper choosing per CPU. Both variants match the JIT path; "fallback" really runs the AVX2 ones.
TEST(MultiTarget, BothVariantsMatchTheJitPath) {
  std::string dir = scratch_dir("aot_multitarget");
  fs::remove_all(dir);
  const std::string inputs = write_inputs(dir + "/in", 16, 768);
  for (const char* sub : {"jit", "native", "fallback"}) fs::create_directories(dir + "/" + sub);
  CommandResult jit = run_command(
      gaf_binary() + " run builtin:bert-base --layers 1 --seq 16" + inputs + " --output-dir " + dir + "/jit", dir);
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  TensorMap ref{{"o", read_npy(dir + "/jit/last_hidden_state.npy")}};
  for (const char* mode : {"native", "fallback"}) {
    CommandResult r =
        run_command(std::string(AOT_MULTITARGET_RUN) + " " + dir + "/in " + dir + "/" + mode + " " + mode, dir);
    ASSERT_EQ(r.exit_code, 0) << mode << "\n" << r.err;
    TensorMap got{{"o", read_npy(dir + "/" + mode + "/last_hidden_state.npy")}};
    EXPECT_LE(max_rel_diff(got, ref), std::string(mode) == "native" ? 1e-6 : 1e-5) << mode;
    if (std::string(mode) == "fallback") {
      EXPECT_NE(r.out.find("refused: "), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("refused: 0\n"), std::string::npos) << "no AVX-512 variant was refused: " << r.out;
    }
  }
}

// bert_int8 and bert_bf16 (gaf compile --precision int8 / bf16 at build time) run through the plan
// runtime like gaf run with the same precision (the same kernels: within 1e-6 relative); on a CPU
// without the features a plan names it is refused in one line naming them, and so is a plan that
// names one this CPU lacks.
struct LowPrecisionLibrary {
  std::string precision;
  std::string runner;
  std::string plan_file;
};

class AotLowPrecision : public ::testing::TestWithParam<LowPrecisionLibrary> {};

TEST_P(AotLowPrecision, LibraryMatchesGafRunAndNamesTheCpuFeaturesItNeeds) {
  const LowPrecisionLibrary& lib = GetParam();
  std::string dir = scratch_dir("aot_" + lib.precision);
  fs::remove_all(dir);
  const std::string inputs = write_inputs(dir + "/in", 16, 768);
  for (const char* sub : {"jit", "aot", "refused"}) fs::create_directories(dir + "/" + sub);
  const json plan = json::parse(slurp(lib.plan_file));
  const std::string features = " " + cpu_facts().feature_list() + " ";
  bool runs_here = true;
  for (const auto& f : plan.value("cpu_features", json::array()))
    runs_here = runs_here && features.find(" " + f.get<std::string>() + " ") != std::string::npos;
  CommandResult aot = run_command(lib.runner + " " + dir + "/in " + dir + "/aot native", dir);
  if (!runs_here) {
    EXPECT_EQ(aot.exit_code, 1);
    EXPECT_NE(aot.err.find("field 'cpu_features': its kernels need"), std::string::npos) << aot.err;
    GTEST_SKIP() << "this CPU lacks a feature the " << lib.precision << " library was compiled for: " << aot.err;
  }
  ASSERT_EQ(aot.exit_code, 0) << aot.err;
  CommandResult jit = run_command(gaf_binary() + " run builtin:bert-base --layers 1 --seq 16 --precision " +
                                      lib.precision + inputs + " --output-dir " + dir + "/jit",
                                  dir);
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  TensorMap ref{{"o", read_npy(dir + "/jit/last_hidden_state.npy")}},
      got{{"o", read_npy(dir + "/aot/last_hidden_state.npy")}};
  EXPECT_LE(max_rel_diff(got, ref), 1e-6);
  // A feature no x86 CPU has: refused before any kernel runs.
  json edited = plan;
  edited["cpu_features"] = json::array({"avx512_vnni_from_the_future"});
  const std::string edited_path =
      fs::path(lib.plan_file).parent_path().string() + "/bert_" + lib.precision + "_edited.plan.json";
  { std::ofstream(edited_path) << edited.dump(1); }
  CommandResult refused = run_command(lib.runner + " " + dir + "/in " + dir + "/refused native " + edited_path, dir);
  fs::remove(edited_path);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("its kernels need avx512_vnni_from_the_future, which this CPU"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir + "/refused/last_hidden_state.npy"));
}

INSTANTIATE_TEST_SUITE_P(Libraries, AotLowPrecision,
                         ::testing::Values(LowPrecisionLibrary{"int8", AOT_INT8_RUN, BERT_INT8_PLAN_FILE},
                                           LowPrecisionLibrary{"bf16", AOT_BF16_RUN, BERT_BF16_PLAN_FILE}),
                         [](const ::testing::TestParamInfo<LowPrecisionLibrary>& i) { return i.param.precision; });

// A kernel handed a buffer other than the one it was compiled for: Halide's runtime reports an
// error, which the plan runner's error handler turns into one GafError line (no abort).
TEST(MultiTarget, HalideRuntimeErrorsAreErrorsNotAborts) {
  std::string dir = scratch_dir("aot_short_extent");
  fs::remove_all(dir);
  const std::string inputs = write_inputs(dir + "/in", 16, 768);
  fs::create_directories(dir + "/out");
  CommandResult r = run_command(std::string(AOT_MULTITARGET_RUN) + " " + dir + "/in " + dir + "/out short-extent", dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1) << r.err;
  EXPECT_NE(r.err.find("kernel failed with Halide error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("g0 "), std::string::npos) << "names the group: " << r.err;
  EXPECT_EQ(r.out.find("Error"), std::string::npos) << "Halide's own print: " << r.out;
}

// The npu-tile library: the same outputs as the host (gaf run), and the simulator in the plan
// runtime counts exactly what the JIT NPU model (gaf report --target npu-tile) counts.
TEST(MultiTarget, NpuTileLibraryMatchesHostAndTheJitNpuModel) {
  std::string dir = scratch_dir("aot_npu");
  fs::remove_all(dir);
  fs::create_directories(dir + "/jit");
  fs::create_directories(dir + "/npu");
  const std::string inputs = write_inputs(dir + "/in", 16, 768);
  CommandResult jit = run_command(
      gaf_binary() + " run builtin:bert-base --layers 1 --seq 16" + inputs + " --output-dir " + dir + "/jit", dir);
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  CommandResult npu = run_command(std::string(AOT_NPU_RUN) + " " + dir + "/in " + dir + "/npu", dir);
  ASSERT_EQ(npu.exit_code, 0) << npu.err;
  TensorMap ref{{"o", read_npy(dir + "/jit/last_hidden_state.npy")}};
  TensorMap got{{"o", read_npy(dir + "/npu/last_hidden_state.npy")}};
  EXPECT_LE(max_rel_diff(got, ref), 1e-5);

  CommandResult report = run_command(gaf_binary() + " report --target npu-tile builtin:bert-base --layers 1 --seq 16" +
                                         inputs + " --json " + dir + "/report.json",
                                     dir);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json fused = json::parse(slurp(dir + "/report.json"))["npu_tile"]["fused"];
  char want[256];
  std::snprintf(want, sizeof want, "npu: launches %lld gm_read %lld gm_write %lld macs %lld",
                fused["launches"].get<long long>(), fused["gm_read_bytes"].get<long long>(),
                fused["gm_write_bytes"].get<long long>(), fused["cube_macs"].get<long long>());
  EXPECT_NE(npu.out.find(want), std::string::npos) << "AOT: " << npu.out << "JIT: " << want;
  EXPECT_GT(fused["cube_macs"].get<long long>(), 0);
}

}  // namespace
}  // namespace gaf

#include "engine/model_source.h"
#include "fusion/planner/planner.h"
#include "generators/aot_compiler.h"
#include "runtime/plan_runner.h"

namespace gaf {
namespace {

// The plan file of bert_infer run in this process with JIT-compiled kernels behind the runner's
// kernel interface: the same outputs as bert_infer's AOT kernels.
TEST(JitKernelTable, RunsTheCompiledPlanLikeTheAotLibrary) {
  std::string dir = scratch_dir("jit_kernel_table");
  fs::remove_all(dir);
  std::string inputs = write_inputs(dir + "/in", BERT_SEQ, 768);
  fs::create_directories(dir + "/aot");
  CommandResult aot = run_command(std::string(BERT_INFER) + inputs + " --repeat 1 --output-dir " + dir + "/aot", dir);
  ASSERT_EQ(aot.exit_code, 0) << aot.err;

  ReferenceExecutor folder;
  ModelOptions mo;
  mo.layers = BERT_LAYERS;
  mo.seq = BERT_SEQ;
  LoadedModel m = load_model("builtin:bert-base", mo, folder);
  RuleRegistry rules = RuleRegistry::builtin();
  FusionPlan plan = plan_fusion_rewriting(m.graph, PlannerOptions{}, rules);
  JitKernelTable table = jit_kernel_table(m.graph, plan, "bert");
  EXPECT_EQ(table.kernels.size(), json::parse(slurp(BERT_PLAN_FILE))["kernels"].size());
  PlanRunner runner(BERT_PLAN_FILE, table.kernels, table.table_hash);
  runner.set_profiling(true);
  std::map<std::string, Tensor> in{{"hidden_states", read_npy(dir + "/in/hidden_states.npy")},
                                   {"attention_mask", read_npy(dir + "/in/attention_mask.npy")}};
  TensorMap jit{{"o", runner.run(in).at("last_hidden_state")}};
  TensorMap ref{{"o", read_npy(dir + "/aot/last_hidden_state.npy")}};
  EXPECT_LE(max_rel_diff(jit, ref), 1e-6);
  double total = 0;
  for (double ms : runner.group_ms()) total += ms;
  EXPECT_GT(total, 0.0) << "profiling timed the groups";

  try {  // an empty table
    PlanRunner wrong(BERT_PLAN_FILE, std::map<std::string, PlanKernel>{}, table.table_hash);
    ADD_FAILURE() << "a table without bert_k0 was accepted";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'bert_k0' is not in the kernel table"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gaf
