// Input a hostile user would try: sizes that overflow, declared sizes larger than the bytes
// present, external data outside its file or not a file, FIFOs and directories named as files,
// out-of-range Gather indices, nonsense flags and target values. Each must end in one line
// naming the file/flag/tensor and exit 1, promptly, without allocating what was declared.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/file_io.h"
#include "runtime/memory_budget.h"
#include "runtime/npu_target.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"

using namespace gaf;
using namespace gaf::testing;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const GafError& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR(call, needle)                                            \
  do {                                                                        \
    std::string msg_ = error_of([&] { call; });                               \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "error was: " << msg_; \
  } while (0)

class HostileCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch_dir("hostile_models");
    CommandResult r =
        run_command(std::string(python()) + " " + source_dir() + "/test/models/make_hostile_models.py " + dir_,
                    scratch_dir("hostile_gen"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::remove(dir_ + "/external_fifo/pipe");
    ASSERT_EQ(mkfifo((dir_ + "/external_fifo/pipe").c_str(), 0600), 0);
  }
  static std::string m(const std::string& f) { return dir_ + "/" + f; }
  // Runs `cmd` (a whole command line), expects exit 1 and one stderr line containing `needles`.
  static CommandResult expect_error(const std::string& cmd, const std::vector<std::string>& needles) {
    CommandResult r = run_command("timeout 60 " + cmd, scratch_dir("hostile_run"));
    EXPECT_EQ(r.exit_code, 1) << cmd << "\nstderr: " << r.err;
    EXPECT_EQ(r.err_lines(), 1) << cmd << "\nstderr: " << r.err;
    for (const std::string& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
    return r;
  }
  static std::string gaf() { return gaf_binary() + " "; }
  static std::string dir_;
};
std::string HostileCli::dir_;

}  // namespace

// ---- sizes ----------------------------------------------------------------------------------

TEST(CheckedSizes, OverflowIsAnError) {
  EXPECT_EQ(shape_numel({3, 4}), 12);
  EXPECT_EQ(byte_size(DType::Int64, {3, 4}), 96);
  EXPECT_ERROR(shape_numel({int64_t{1} << 62, 8}), "more elements than fit in 64 bits");
  EXPECT_ERROR(byte_size(DType::Float32, {int64_t{1} << 31, int64_t{1} << 31}), "more bytes than fit");
  EXPECT_ERROR(shape_numel({2, -1}), "negative extent");
  EXPECT_ERROR(checked_add(INT64_MAX, 1, "offset"), "offset");
  EXPECT_EQ(parse_size("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_size("0"), 0);
  for (const char* bad : {"", "9223372036854775808", "-1", "+1", " 1", "1e3", "abc"})
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
}

TEST(MemoryBudget, RefusesAnAllocationOverTheBudget) {
  const int64_t before = tensor_bytes_live();
  set_memory_budget(int64_t{64} << 20);
  EXPECT_ERROR(Tensor(DType::Float32, {int64_t{1} << 25}), "more than the memory budget of 67.1 MB");
  EXPECT_EQ(tensor_bytes_live(), before) << "a refused allocation is not counted";
  {
    Tensor ok(DType::Float32, {1024});
    EXPECT_GT(tensor_bytes_live(), before);
  }
  EXPECT_EQ(tensor_bytes_live(), before) << "a freed tensor is uncounted";
  set_memory_budget(0);
  EXPECT_EQ(memory_budget(), physical_memory_bytes());
  EXPECT_EQ(parse_byte_count("512M", "--max-memory"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_count("2G", "--max-memory"), int64_t{2} << 30);
  EXPECT_ERROR(parse_byte_count("lots", "--max-memory"), "--max-memory 'lots'");
  EXPECT_ERROR(parse_byte_count("nan", "--max-memory"), "--max-memory 'nan'");
}

// ---- .npy -----------------------------------------------------------------------------------

namespace {
std::string write_npy_header(const std::string& path, const std::string& dict, const std::string& body = "") {
  std::string h = dict;
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << char(1) << char(0) << char(h.size() & 0xff) << char(h.size() >> 8) << h << body;
  return path;
}
}  // namespace

TEST(HostileNpy, OverflowingShapeNamesTheFile) {
  std::string p = write_npy_header(scratch_dir("npy_overflow.npy"),
                                   "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 8), }");
  EXPECT_ERROR(read_npy(p), "npy_overflow.npy: .npy shape: shape [4611686018427387905,8] has more elements");
}

TEST(HostileNpy, DeclaredSizeCheckedBeforeAllocating) {
  std::string p = write_npy_header(scratch_dir("npy_big.npy"),
                                   "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", "abcd");
  const int64_t before = tensor_bytes_live();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_ERROR(read_npy(p), "truncated .npy data (4 bytes, expected 4000000000");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  EXPECT_EQ(tensor_bytes_live(), before);
}

TEST(HostileNpy, DirectoryAndFifoAreRefused) {
  std::string d = scratch_dir("a_directory.npy");
  fs::create_directories(d);
  EXPECT_ERROR(read_npy(d), "a_directory.npy: is a directory, expected a .npy file");
  std::string fifo = scratch_dir("a_fifo.npy");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_ERROR(read_npy(fifo), "a_fifo.npy: is not a regular file");
  EXPECT_ERROR(read_npy(scratch_dir("missing.npy")), "missing.npy: cannot open .npy file: No such file");
}

TEST(HostileNpy, BadShapeEntries) {
  std::string p = write_npy_header(scratch_dir("npy_bad.npy"),
                                   "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }");
  EXPECT_ERROR(read_npy(p), "bad .npy shape entry '99999999999999999999999'");
  p = write_npy_header(scratch_dir("npy_neg.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }");
  EXPECT_ERROR(read_npy(p), "bad .npy shape entry '-2'");
}

// ---- TensorProto ----------------------------------------------------------------------------

TEST(HostileTensorProto, DeclaredSizeCheckedBeforeAllocating) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(int64_t{1} << 28);
  p.add_dims(2);
  p.set_raw_data(std::string(8, '\0'));
  const int64_t before = tensor_bytes_live();
  EXPECT_ERROR(tensor_from_proto(p, "w"), "w: raw data has 8 bytes, expected 2147483648");
  EXPECT_EQ(tensor_bytes_live(), before);
  p.clear_raw_data();
  p.set_dims(0, int64_t{1} << 61);
  EXPECT_ERROR(tensor_from_proto(p, "w"), "w: float32[2305843009213693952,2] has more bytes than fit");
}

// A model's large raw_data weight is moved out of the message into a deferred tensor: nothing is
// allocated until it is read, then it holds the bytes; a wrong size is refused first, naming it.
TEST(HostileTensorProto, LargeRawDataTakenNotCopied) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(256);
  p.add_dims(128);
  std::string raw(256 * 128 * sizeof(float), '\0');
  for (int i = 0; i < 256 * 128; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(raw.data() + i * sizeof(float), &v, sizeof v);
  }
  p.set_raw_data(raw);
  const int64_t before = tensor_bytes_live();
  Tensor t = take_tensor_from_proto(p, "w", "");
  EXPECT_FALSE(p.has_raw_data()) << "moved out of the message";
  EXPECT_FALSE(t.materialized());
  EXPECT_EQ(tensor_bytes_live(), before);
  EXPECT_EQ(t.data<float>()[0], 0.0f);
  EXPECT_EQ(t.data<float>()[256 * 128 - 1], static_cast<float>(256 * 128 - 1));
  onnx::TensorProto bad;
  bad.set_data_type(onnx::TensorProto::FLOAT);
  bad.add_dims(256);
  bad.add_dims(129);
  bad.set_raw_data(raw);
  EXPECT_ERROR(take_tensor_from_proto(bad, "w", ""), "w: raw data has 131072 bytes, expected 132096");
}

// ---- file writes ----------------------------------------------------------------------------

namespace {
std::vector<std::string> folder_listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

TEST(AtomicWrite, AFullDiskKeepsThePreviousFileAndLeavesNoTemporary) {
  std::string dir = scratch_dir("atomic_full");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = dir + "/db.json";
  write_file_atomically(path, {"previous contents\n"});
  // A file size limit makes write() fail with EFBIG as a full disk fails with ENOSPC.
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  std::string err = error_of([&] { write_file_atomically(path, {std::string(100000, 'x')}); });
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_NE(err.find("db.json: write failed (File too large); the previous file, if any, is unchanged"),
            std::string::npos)
      << err;
  EXPECT_EQ(slurp(path), "previous contents\n");
  EXPECT_EQ(folder_listing(dir), std::vector<std::string>{"db.json"});
}

TEST(AtomicWrite, AFailedRenameLeavesNoTemporary) {
  std::string dir = scratch_dir("atomic_rename");
  fs::remove_all(dir);
  fs::create_directories(dir + "/taken/inner");
  EXPECT_ERROR(write_file_atomically(dir + "/taken", {"x"}), "taken: write failed");
  EXPECT_EQ(folder_listing(dir), std::vector<std::string>{"taken"});
}

TEST(AtomicWrite, DestinationsCheckedUpFront) {
  EXPECT_ERROR(check_writable_file(scratch_dir("no/such/folder/db.json"), "--db"), "--db '");
  EXPECT_ERROR(check_writable_file(scratch_dir("no/such/folder/db.json"), "--db"), "/no/such/folder' does not exist");
  fs::create_directories(scratch_dir("is_a_dir.json"));
  EXPECT_ERROR(check_writable_file(scratch_dir("is_a_dir.json"), "--db"), "exists and is not a regular file");
}

TEST(AtomicWrite, ClashingOutputNamesGetDistinctFiles) {
  std::vector<std::string> p = output_npy_paths("out", {"a/b", "a:b", "a_b", "..", "c"});
  EXPECT_EQ(p, (std::vector<std::string>{"out/a_b.npy", "out/a_b.2.npy", "out/a_b.3.npy", "out/_...npy", "out/c.npy"}));
}

// ---- NPU target -----------------------------------------------------------------------------

TEST(HostileNpuTarget, EveryFieldHasARange) {
  std::string text = slurp(source_dir() + "/schedules/targets/ascend910_like.json");
  auto with = [&](const std::string& field, const std::string& value) {
    std::string t = text;
    size_t at = t.find("\"" + field + "\": {\"value\": ");
    size_t start = t.find(':', t.find("value", at)) + 2, end = t.find(',', start);
    return t.replace(start, end - start, value);
  };
  EXPECT_ERROR(parse_npu_target(with("ai_cores", "1e30"), "t.json"),
               "t.json: field 'ai_cores' is 1e+30, must be in [1, 4096]");
  EXPECT_ERROR(parse_npu_target(with("ub_bytes", "1e300"), "t.json"), "field 'ub_bytes'");
  EXPECT_ERROR(parse_npu_target(with("clock_ghz", "1e9"), "t.json"), "field 'clock_ghz'");
  EXPECT_ERROR(parse_npu_target(with("cube_m", "16.5"), "t.json"), "field 'cube_m' must be a whole number");
  EXPECT_NO_THROW(parse_npu_target(text, "t.json"));
  // Found by fuzz_npu_target: a name that is not a string escaped as a JSON library exception.
  EXPECT_ERROR(parse_npu_target(R"({"name": 6384, "ai_cores": 1})", "t.json"),
               "t.json: field 'name' must be a string, got 6384");
  // Found by fuzz_schedule_db: a number beyond a double is nlohmann's out_of_range, not parse_error.
  EXPECT_ERROR(parse_npu_target(R"({"ai_cores": 2E000001200000000})", "t.json"), "t.json: not valid JSON (");
}

// ---- the CLI --------------------------------------------------------------------------------

TEST_F(HostileCli, OverflowingDimIsAnErrorNotAWrongShape) {
  expect_error(gaf() + "info " + m("overflow_dims.onnx") + " --dim n=4611686018427387905",
               {"input 'x'", "has more elements than fit in 64 bits"});
}

TEST_F(HostileCli, HugeDeclaredInitializerIsRefusedQuickly) {
  auto t0 = std::chrono::steady_clock::now();
  expect_error(gaf() + "info " + m("huge_initializer.onnx"),
               {"initializer 'w'", "raw data has 8 bytes, expected 2147483648"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST_F(HostileCli, ExternalData) {
  expect_error(gaf() + "info " + m("external_far/model.onnx"),
               {"initializer 'w'", "external data range offset 9223372036854775800", "64 bytes"});
  expect_error(gaf() + "info " + m("external_fifo/model.onnx"), {"pipe: is not a regular file"});
  expect_error(gaf() + "info " + m("external_bad_offset/model.onnx"),
               {"initializer 'w'", "external data offset 'abc'"});
}

TEST_F(HostileCli, MemoryBudget) {
  auto t0 = std::chrono::steady_clock::now();
  expect_error(gaf() + "info builtin:bert-base --layers 100000",
               {"the weights of 100000 layers needs", "--max-memory"});
  expect_error(gaf() + "info builtin:bert-base --layers 2 --max-memory 50M",
               {"the weights of 2 layers needs 56.7 MB", "memory budget of 52.4 MB"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  expect_error(gaf() + "info builtin:bert-base --max-memory 12Q", {"--max-memory '12Q'"});
}

TEST_F(HostileCli, OpsetNewerThanTheImporter) {
  expect_error(gaf() + "info " + m("opset99.onnx"), {"opset99.onnx", "opset 99", "supports opsets up to 18"});
}

TEST_F(HostileCli, GatherOutOfRange) {
  expect_error(gaf() + "info " + m("gather_const_oob.onnx"), {"node 'gather_const' (Gather)", "index 5", "extent 3"});
  expect_error(gaf() + "run --reference " + m("gather_input_oob.onnx") + " --input idx=" + m("idx_oob.npy"),
               {"node 'gather_in' (Gather)", "index 3", "extent 3"});
  expect_error(gaf() + "run " + m("gather_input_oob.onnx") + " --input idx=" + m("idx_oob.npy"),
               {"node 'gather_in' (Gather)", "index 3", "extent 3"});  // the plan runner, in process
  CommandResult ok =
      run_command(gaf() + "run --reference " + m("gather_input_oob.onnx") + " --input idx=" + m("idx_ok.npy"),
                  scratch_dir("hostile_run"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Found by fuzz_onnx_model: signed overflow in Reshape's inference, a past-the-end insert in Gather's.
TEST_F(HostileCli, ShapeInferenceOnHostileAttributes) {
  expect_error(gaf() + "info " + m("reshape_overflow.onnx"), {"node 'reshape' (Reshape)", "does not fit in 64 bits"});
  expect_error(gaf() + "info " + m("gather_scalar.onnx"), {"node 'gather_scalar' (Gather)", "rank >= 1"});
}

TEST_F(HostileCli, FlagsThatNameNothingOrRepeat) {
  expect_error(gaf() + "info " + m("overflow_dims.onnx") + " --dim n=2 --dim n=3", {"--dim 'n' is given twice"});
  expect_error(gaf() + "info " + m("overflow_dims.onnx") + " --dim n=2 --dim m=3", {"--dim 'm'", "it has: n"});
  expect_error(gaf() + "plan " + m("overflow_dims.onnx") + " --dim n=2 --skip nothing", {"--skip 'nothing'"});
  expect_error(gaf() + "info " + m("overflow_dims.onnx") + " --dim n=2 --threads 100000",
               {"--threads 100000 is more than"});
  expect_error(gaf() + "verify " + m("overflow_dims.onnx") + " --dim n=2 --atol nan",
               {"--rtol and --atol must be finite"});
  expect_error(gaf() + "verify " + m("overflow_dims.onnx") + " --dim n=2 --rtol -1",
               {"--rtol and --atol must be finite"});
}

TEST_F(HostileCli, DirectoryAsInputFile) {
  fs::create_directories(scratch_dir("dir_input.npy"));
  expect_error(gaf() + "run " + m("overflow_dims.onnx") + " --input x=" + scratch_dir("dir_input.npy"),
               {"dir_input.npy: is a directory, expected a .npy file"});
}

TEST_F(HostileCli, NonFiniteInputsAreReported) {
  CommandResult r = run_command(gaf() + "run " + m("clashing_outputs.onnx") + " --input x=" + m("x_nan.npy"),
                                scratch_dir("hostile_run"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--input 'x'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 NaN and 0 Inf values of 2"), std::string::npos) << r.err;
}

TEST_F(HostileCli, ClashingOutputNamesDoNotOverwriteEachOther) {
  std::string out = scratch_dir("clash_out");
  fs::remove_all(out);
  fs::create_directories(out);
  CommandResult r =
      run_command(gaf() + "run " + m("clashing_outputs.onnx") + " --input x=" + m("x_nan.npy") + " --output-dir " + out,
                  scratch_dir("hostile_run"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a_b.npy (output 'a/b')"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a_b.2.npy (output 'a:b')"), std::string::npos) << r.out;
  EXPECT_EQ(read_npy(out + "/a_b.2.npy").data<float>()[1], -1.0f);
  // A folder that cannot be created (its parent is a file) is one line naming the flag.
  expect_error(gaf() + "run " + m("clashing_outputs.onnx") + " --output-dir " + out + "/a_b.npy/sub",
               {"--output-dir", "cannot create the folder"});
}

TEST_F(HostileCli, NpuTargetOutOfRange) {
  std::string text = slurp(source_dir() + "/schedules/targets/ascend910_like.json");
  text.replace(text.find("\"value\": 32"), 11, "\"value\": 1e30");
  std::string path = scratch_dir("cores_1e30.json");
  std::ofstream(path) << text;
  expect_error(gaf() + "report builtin:bert-base --layers 1 --seq 8 --target npu-tile --npu-target " + path,
               {"cores_1e30.json", "field 'ai_cores' is 1e+30"});
}
