// Bad input gets one clear line on stderr naming the problem, exit code 1, no crash and no
// partial output. Each case runs the real gaf binary.
#include <cmath>
#include <filesystem>

#include "fusion/frontend/onnx_import.h"
#include "test/cli_util.h"

using namespace gaf::testing;
namespace fs = std::filesystem;

namespace {

class CliErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch_dir("cli_errors_models");
    CommandResult r =
        run_command(std::string(python()) + " " + source_dir() + "/test/models/make_test_models.py " + dir_,
                    scratch_dir("cli_errors_gen"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static std::string m(const std::string& f) { return dir_ + "/" + f; }

  // Runs gaf with `args`, expects exit 1 and exactly one stderr line containing each of `needles`.
  static void expect_error(const std::string& args, const std::vector<std::string>& needles) {
    CommandResult r = run_command(gaf_binary() + " " + args, scratch_dir("cli_errors_run"));
    EXPECT_EQ(r.exit_code, 1) << "args: " << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err_lines(), 1) << "args: " << args << "\nstderr: " << r.err;
    for (const std::string& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
  }
  static std::string dir_;
};
std::string CliErrors::dir_;

}  // namespace

TEST_F(CliErrors, TruncatedModel) {
  std::string src = m("external_ok/model.onnx");
  std::string bad = m("truncated.onnx");
  auto size = fs::file_size(src);
  fs::copy_file(src, bad, fs::copy_options::overwrite_existing);
  fs::resize_file(bad, size / 2);
  expect_error("run " + bad + " --input x=" + m("x.npy"), {"truncated.onnx", "not a valid ONNX model"});
}

TEST_F(CliErrors, GarbageModel) {
  std::string bad = m("garbage.onnx");
  {
    std::ofstream f(bad, std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 7919 + 13) & 0xff));
  }
  expect_error("run " + bad, {"garbage.onnx", "not a valid ONNX model"});
}

TEST_F(CliErrors, MissingModelFile) { expect_error("info " + m("nope.onnx"), {"nope.onnx", "cannot open"}); }

TEST_F(CliErrors, EveryUnsupportedOpListedAtOnce) {
  expect_error("run " + m("two_unsupported.onnx"), {"2 unsupported op(s)", "(Acos, 'acos0')", "(Cosh, 'cosh0')"});
}

TEST_F(CliErrors, MissingInput) {
  expect_error("run " + m("add.onnx") + " --input a=" + m("a.npy"), {"input 'b' is missing"});
}

TEST_F(CliErrors, ExtraInput) {
  expect_error(
      "run " + m("add.onnx") + " --input a=" + m("a.npy") + " --input b=" + m("b.npy") + " --input c=" + m("b.npy"),
      {"input 'c' is not an input of the model"});
}

TEST_F(CliErrors, WrongShape) {
  expect_error("run " + m("add.onnx") + " --input a=" + m("a_wrong_shape.npy") + " --input b=" + m("b.npy"),
               {"input 'a' has shape [3,2]", "expected float32[2,3]"});
}

TEST_F(CliErrors, WrongDtype) {
  expect_error("run " + m("add.onnx") + " --input a=" + m("a_i64.npy") + " --input b=" + m("b.npy"),
               {"input 'a' has dtype int64, expected float32"});
}

TEST_F(CliErrors, NpyOfUnsupportedDtype) {
  expect_error("run " + m("add.onnx") + " --input a=" + m("a_f64.npy") + " --input b=" + m("b.npy"),
               {"a_f64.npy", "dtype '<f8' is not supported"});
}

TEST_F(CliErrors, TruncatedNpy) {
  expect_error("run " + m("add.onnx") + " --input a=" + m("a_truncated.npy") + " --input b=" + m("b.npy"),
               {"a_truncated.npy", "truncated .npy data"});
}

TEST_F(CliErrors, ExternalDataEscapingModelFolder) {
  expect_error("run " + m("external_escape/model.onnx") + " --input x=" + m("x.npy"),
               {"external data location '../stolen.bin' escapes the model's folder"});
}

TEST_F(CliErrors, ExternalDataInsideFolderLoads) {
  std::string out = scratch_dir("cli_errors_ext_out");
  fs::create_directories(out);
  CommandResult r = run_command(
      gaf_binary() + " run " + m("external_ok/model.onnx") + " --input x=" + m("x.npy") + " --output-dir " + out,
      scratch_dir("cli_errors_run"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out + "/y.npy"));
}

// External weights are read when first used (Tensor::deferred), not at import: a model's plan and
// reports read none. A file that changed since the import fails then, naming the initializer.
TEST_F(CliErrors, ExternalDataIsReadWhenFirstUsed) {
  const std::string copy = scratch_dir("cli_errors_ext_lazy");
  fs::remove_all(copy);
  fs::create_directories(copy);
  fs::copy(m("external_ok"), copy, fs::copy_options::recursive);
  gaf::Graph g = gaf::import_onnx_file(copy + "/model.onnx");
  const gaf::Tensor w = *g.value("w").constant;
  EXPECT_FALSE(w.materialized());
  gaf::Graph again = gaf::import_onnx_file(copy + "/model.onnx");
  const gaf::Tensor& made = *again.value("w").constant;
  EXPECT_GT(std::fabs(made.as_double(0)) + std::fabs(made.as_double(made.numel() - 1)), 0.0);
  EXPECT_TRUE(made.materialized());
  fs::resize_file(copy + "/weights.bin", 0);
  try {
    (void)w.raw();
    ADD_FAILURE() << "reading a truncated external file did not fail";
  } catch (const gaf::GafError& e) {
    EXPECT_NE(std::string(e.what()).find("initializer 'w'"), std::string::npos) << e.what();
  }
}

TEST_F(CliErrors, UnboundSymbolicDim) {
  // The PyTorch-style model has symbolic batch/seq; info without bindings cannot plan shapes.
  std::string dir = scratch_dir("cli_errors_sym");
  CommandResult gen =
      run_command(std::string(python()) + " " + source_dir() + "/test/models/export_bert.py " + dir + " 14 --layers 1",
                  scratch_dir("cli_errors_gen"));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  expect_error("info " + dir + "/model.onnx --dim batch=2", {"unbound symbolic dim(s): seq", "--dim"});
  expect_error("info " + dir + "/model.onnx --dim batch", {"--dim 'batch': expected NAME=VALUE"});
}

TEST_F(CliErrors, FailedRunLeavesNoPartialOutput) {
  std::string out = scratch_dir("cli_errors_no_partial");
  fs::remove_all(out);
  fs::create_directories(out);
  expect_error("run " + m("add.onnx") + " --input a=" + m("a_wrong_shape.npy") + " --input b=" + m("b.npy") +
                   " --output-dir " + out,
               {"input 'a'"});
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(CliErrors, UnknownBuiltin) {
  expect_error("info builtin:gpt-9", {"unknown built-in model 'builtin:gpt-9'", "builtin:bert-base"});
}

// gaf compile --precision bf16/int8 packs for one host target: several (a dispatching library)
// or npu-tile are refused in one line.
TEST_F(CliErrors, CompileLowPrecisionForOneHostTargetOnly) {
  expect_error("compile builtin:bert-base --layers 1 --seq 16 --precision bf16 -o " + scratch_dir("cli_errors_bf16") +
                   " --halide-target host,x86-64-linux-sse41-avx-f16c-fma-avx2",
               {"gaf compile --precision bf16", "compiles for one host target"});
  expect_error("compile builtin:bert-base --layers 1 --seq 16 --precision int8 --target npu-tile -o " +
                   scratch_dir("cli_errors_int8"),
               {"gaf compile --precision int8", "not npu-tile"});
}
