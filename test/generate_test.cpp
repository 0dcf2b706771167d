// Greedy decoding with a KV cache (engine/generator.h, gaf generate): the GPT-2-style decoder of
// test/models/export_gpt2_kv.py, exported as two ONNX files (prefill, step with past) with
// seeded weights, must generate exactly PyTorch's 128 greedy tokens with its own KV cache; the
// CLI checks them with --compare (exit 3 naming the first differing token) and refuses bad input
// with one line (exit 1). Skipped when python3-torch or python3-onnx is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/generator.h"
#include "fusion/frontend/onnx_import.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"
#include "test/error_text.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr int64_t kNewTokens = 128;

bool torch_available() {
  static const bool ok =
      run_command(std::string(python()) + " -c 'import torch, onnx'", scratch_dir("generate_probe")).exit_code == 0;
  return ok;
}

// The two decoder files, input_ids.npy (1 x 32) and expected_tokens.npy, exported once per process
// into scratch folder `name` (each ctest entry of this file its own: they may run at once).
// `extra`: more export_gpt2_kv.py options (--layout single).
std::string exported(const std::string& name, const std::string& extra = "") {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(name);
  if (it != dirs.end()) return it->second;
  const std::string d = scratch_dir("generate/" + name);
  CommandResult gen = run_command(std::string(python()) + " " + source_dir() + "/test/models/export_gpt2_kv.py " + d +
                                      " --new-tokens " + std::to_string(kNewTokens) + " " + extra,
                                  d + "_gen");
  if (gen.exit_code != 0) throw std::runtime_error("export_gpt2_kv.py failed: " + gen.err);
  return dirs[name] = d;
}

class Generate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch_available())
      GTEST_SKIP() << "python3-torch or python3-onnx is missing (apt-get install python3-torch python3-onnx)";
    dir_ = exported(folder(), export_options());
  }
  virtual const char* folder() const { return "gpt2_kv"; }
  virtual const char* export_options() const { return ""; }
  std::string dir_;
};

// The same model as one file with past inputs (model.onnx), as transformers.js models ship.
class GenerateSingleFile : public Generate {
  const char* folder() const override { return "gpt2_kv_single"; }
  const char* export_options() const override { return "--layout single"; }
};

// optimum's merged decoder: decoder_model_merged.onnx, an If on use_cache_branch.
class GenerateMerged : public Generate {
  const char* folder() const override { return "gpt2_kv_merged"; }
  const char* export_options() const override { return "--layout merged"; }
};

// The AOT app's ctest entries export their own copies.
class GenerateAotApp : public Generate {
  const char* folder() const override { return "aot_app_model"; }
};
class GenerateAotAppSingleFile : public Generate {
  const char* folder() const override { return "aot_app_single"; }
  const char* export_options() const override { return "--layout single"; }
};
class GenerateAotAppMerged : public Generate {
  const char* folder() const override { return "aot_app_merged"; }
  const char* export_options() const override { return "--layout merged"; }
};

std::string ids(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.numel(); ++i) s += std::to_string(t.data<int64_t>()[i]) + " ";
  return s;
}

}  // namespace

TEST_F(Generate, GreedyTokensEqualPyTorchs) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  const Tensor expected = read_npy(dir_ + "/expected_tokens.npy");
  Generator gen(dir_, 1, prompt.shape()[1] + kNewTokens, EngineOptions{});
  // The dims come from the files' inputs: batch bound, seq dynamic for the prefill, the cache
  // length dynamic for a step with seq 1.
  EXPECT_EQ(gen.dims().prefill.dims.at("batch"), 1);
  EXPECT_EQ(gen.dims().prefill.dim_ranges.at("seq").hi, prompt.shape()[1] + kNewTokens);
  EXPECT_EQ(gen.dims().step.dims.at("seq"), 1);
  EXPECT_EQ(gen.dims().step.dim_ranges.at("past").hi, prompt.shape()[1] + kNewTokens - 1);
  Generation g = gen.generate(prompt, kNewTokens);
  EXPECT_EQ(ids(g.tokens), ids(expected));
  EXPECT_EQ(g.step_ms.size(), static_cast<size_t>(kNewTokens - 1));
  // A longer generation than the engines were prepared for is refused before it runs.
  EXPECT_THROW(gen.generate(prompt, kNewTokens + 2), GafError);

  // Sampling on the same engines: top-k 1 is greedy whatever the seed; a seed gives the same
  // tokens every time, another seed others.
  Sampling s;
  s.temperature = 1.0;
  s.top_k = 1;
  s.seed = 5;
  EXPECT_EQ(ids(gen.generate(prompt, kNewTokens, s).tokens), ids(expected));
  s.top_k = 0;
  s.temperature = 2.0;
  const std::string first = ids(gen.generate(prompt, 32, s).tokens);
  EXPECT_EQ(ids(gen.generate(prompt, 32, s).tokens), first);
  s.seed = 6;
  EXPECT_NE(ids(gen.generate(prompt, 32, s).tokens), first);
}

// A 512-id prompt (model positions 1024): the prefill's size class is compiled at 528 rows, and
// its kernels writing the KV cache windows ran at 512 before row 0 (a Halide bounds error) while
// their rows were left to the buffer; 16 tokens equal PyTorch's.
class GenerateLongPrompt : public Generate {
  const char* folder() const override { return "gpt2_kv_p512"; }
  const char* export_options() const override { return "--prompt-len 512 --max-pos 1024"; }
};

TEST_F(GenerateLongPrompt, GreedyTokensEqualPyTorchs) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  ASSERT_EQ(prompt.shape()[1], 512);
  const Tensor expected = read_npy(dir_ + "/expected_tokens.npy");
  Generator gen(dir_, 1, 512 + 16, EngineOptions{});
  Generation g = gen.generate(prompt, 16);
  Tensor want(DType::Int64, {1, 16});
  for (int i = 0; i < 16; ++i) want.data<int64_t>()[i] = expected.data<int64_t>()[i];
  EXPECT_EQ(ids(g.tokens), ids(want));
}

// One file with past inputs serves both runs: the prefill binds the cache length to 0 and reads
// pasts of length 0; the tokens equal PyTorch's.
TEST_F(GenerateSingleFile, GreedyTokensEqualPyTorchs) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  const Tensor expected = read_npy(dir_ + "/expected_tokens.npy");
  ASSERT_TRUE(decoder_files(dir_).single());
  Generator gen(dir_, 1, prompt.shape()[1] + kNewTokens, EngineOptions{});
  EXPECT_EQ(gen.dims().prefill.dims.at("past"), 0);
  EXPECT_EQ(gen.dims().step.dim_ranges.at("past").hi, prompt.shape()[1] + kNewTokens - 1);
  EXPECT_EQ(ids(gen.generate(prompt, kNewTokens).tokens), ids(expected));
}

// The merged file is imported twice, once per value of use_cache_branch: the prefill is the else
// branch (pasts of length 0, unread), a step the then branch; the tokens equal PyTorch's. Without
// the condition the If is refused in one line that says how to give it.
TEST_F(GenerateMerged, GreedyTokensEqualPyTorchs) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  const Tensor expected = read_npy(dir_ + "/expected_tokens.npy");
  const DecoderFiles files = decoder_files(dir_);
  EXPECT_EQ(files.branch, "use_cache_branch");
  Generator gen(dir_, 1, prompt.shape()[1] + kNewTokens, EngineOptions{});
  EXPECT_EQ(gen.dims().prefill.dims.at("past"), 0);
  EXPECT_EQ(ids(gen.generate(prompt, kNewTokens).tokens), ids(expected));

  const std::string merged = dir_ + "/decoder_model_merged.onnx";
  const std::string err = error_of([&] { import_onnx_file(merged); });
  EXPECT_NE(err.find("(If, 'optimum::if')"), std::string::npos) << err;
  EXPECT_NE(err.find("--branch use_cache_branch=true|false"), std::string::npos) << err;
  EXPECT_EQ(import_onnx_file(merged, {{"use_cache_branch", true}}).inputs().size(), 5u);  // ids + 4 pasts
  const std::string bad = error_of([&] { import_onnx_file(merged, {{"input_ids", true}}); });
  EXPECT_NE(bad.find("--branch 'input_ids': the model has no bool input of that name"), std::string::npos) << bad;
  // The CLI runs either branch: the prefill with a cache of length 0 (a zero-size dim).
  for (const char* branch : {"false", "true"}) {
    const CommandResult r = run_command(gaf_binary() + " run " + merged + " --branch use_cache_branch=" + branch +
                                            " --dim batch=1 --dim seq=" + (branch[0] == 't' ? "1" : "8") +
                                            " --dim past=" + (branch[0] == 't' ? "8" : "0"),
                                        dir_ + "_cli");
    EXPECT_EQ(r.exit_code, 0) << branch << ": " << r.err;
  }
}

// The runtime's KV cache: a step engine with the caches bound appends each token's keys and
// values into the block the prefill allocated (the same storage every step, no copy of the
// past), and its logits and caches equal a step engine without caches, which concatenates
// (tolerance 1e-5 of the largest logit: the same kernels on the same values, only the layout
// of the cache differs).
TEST_F(Generate, KvCacheIsAppendedInPlace) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  const int64_t max_len = prompt.shape()[1] + 9;  // 8 steps in the block, one from a dense past
  const Graph prefill_graph = import_onnx_file(dir_ + "/decoder_model.onnx");
  const Graph step_graph = import_onnx_file(dir_ + "/decoder_with_past_model.onnx");
  const DecoderDims dims = decoder_dims(prefill_graph, step_graph, decoder_files(dir_), 1, max_len);
  EngineOptions po, cached, plain;
  po.model = dims.prefill;
  cached.model = plain.model = dims.step;
  std::vector<std::string> pasts;
  for (const std::string& in : step_graph.inputs()) {
    if (in == "input_ids") continue;
    pasts.push_back(in);
    const std::string present = "present." + in.substr(std::string("past_key_values.").size());
    po.kv_caches.push_back(KvCacheBinding{present, "", 2, max_len});
    cached.kv_caches.push_back(KvCacheBinding{present, in, 2, max_len});
  }
  ASSERT_EQ(pasts.size(), 4u);  // 2 layers x key, value
  Engine prefill(dir_ + "/decoder_model.onnx", po);
  Engine step_cached(dir_ + "/decoder_with_past_model.onnx", cached);
  Engine step_plain(dir_ + "/decoder_with_past_model.onnx", plain);
  TensorMap out = prefill.run({{"input_ids", prompt}});
  const std::string key0 = "present.0.key";
  ASSERT_TRUE(out.at(key0).is_window());
  EXPECT_EQ(out.at(key0).capacity(), max_len);
  const Tensor block = out.at(key0);
  TensorMap in_c{{"input_ids", last_position_argmax(out.at("logits"))}}, in_p = in_c;
  for (const std::string& past : pasts) {
    const std::string present = "present." + past.substr(std::string("past_key_values.").size());
    in_c[past] = out.at(present);
    in_p[past] = out.at(present).clone();
  }
  for (int step = 0; step < 8; ++step) {
    TensorMap oc, op;
    step_cached.run(in_c, oc);
    step_plain.run(in_p, op);
    const Tensor& lc = oc.at("logits");
    const Tensor& lp = op.at("logits");
    float largest = 0, worst = 0;
    for (int64_t i = 0; i < lp.numel(); ++i) {
      largest = std::max(largest, std::abs(lp.data<float>()[i]));
      worst = std::max(worst, std::abs(lc.data<float>()[i] - lp.data<float>()[i]));
    }
    EXPECT_LE(worst, 1e-5f * largest) << "step " << step;
    EXPECT_TRUE(oc.at(key0).same_block(block)) << "step " << step << ": the cache moved";
    EXPECT_EQ(oc.at(key0).shape()[2], prompt.shape()[1] + step + 1);
    const Tensor kc = oc.at(key0).clone(), kp = op.at(key0);
    for (int64_t i = 0; i < kp.numel(); ++i) ASSERT_EQ(kc.data<float>()[i], kp.data<float>()[i]) << "step " << step;
    in_c["input_ids"] = in_p["input_ids"] = last_position_argmax(lp);
    for (const std::string& past : pasts) {
      const std::string present = "present." + past.substr(std::string("past_key_values.").size());
      in_c[past] = oc.at(present);
      in_p[past] = op.at(present);
    }
  }
  // A dense past (not in a block) is copied into one once, and the step still equals.
  TensorMap oc, op;
  for (const std::string& past : pasts) in_c[past] = in_p[past].clone();
  step_cached.run(in_c, oc);
  step_plain.run(in_p, op);
  for (int64_t i = 0; i < op.at("logits").numel(); ++i)
    ASSERT_NEAR(oc.at("logits").data<float>()[i], op.at("logits").data<float>()[i], 1e-4f);
  EXPECT_TRUE(oc.at(key0).is_window());
  // A cache longer than its block is refused with a line naming it.
  in_c["past_key_values.0.key"] = Tensor(DType::Float32, {1, 4, max_len, 32});
  EXPECT_THROW(step_cached.run(in_c, oc), GafError);
}

// Lines of gaf's own on stderr (Halide prints its compile warnings there too).
int gaf_lines(const std::string& err) {
  int n = 0;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) n += line.rfind("gaf: ", 0) == 0;
  return n;
}

// One CLI run (compiling costs most of it): 8 tokens against the expected file with token 5
// changed — tokens 0..4 agree, then exit 3 with one line naming token 5; --profile splits a step
// and sums its kernels by label.
TEST_F(Generate, CliComparesTokensAndRefusesBadInput) {
  const std::string dir = scratch_dir("generate/cli");
  std::filesystem::create_directories(dir);
  Tensor wrong = read_npy(dir_ + "/expected_tokens.npy");
  const int64_t want = wrong.data<int64_t>()[5];
  wrong.data<int64_t>()[5] = (want + 1) % 512;
  write_npy(dir + "/wrong.npy", wrong);
  CommandResult differs = run_command(gaf_binary() + " generate " + dir_ + " --input-ids " + dir_ +
                                          "/input_ids.npy --new-tokens 8 --profile --compare " + dir + "/wrong.npy",
                                      dir + "/differs");
  EXPECT_EQ(differs.exit_code, 3) << differs.err;
  EXPECT_EQ(gaf_lines(differs.err), 1) << differs.err;
  EXPECT_NE(differs.err.find("new token 5 is " + std::to_string(want) + ", " + dir + "/wrong.npy has " +
                             std::to_string((want + 1) % 512)),
            std::string::npos)
      << differs.err;
  EXPECT_NE(differs.out.find("time to first token"), std::string::npos) << differs.out;
  EXPECT_NE(differs.out.find("profile: a decode step, mean of"), std::string::npos) << differs.out;
  EXPECT_NE(differs.out.find("by kernel label (groups, ms per step):"), std::string::npos) << differs.out;
  EXPECT_NE(differs.out.find("Attention"), std::string::npos) << differs.out;

  // Float prompt ids: exit 1, one line naming the file, before any model loads.
  write_npy(dir + "/float_ids.npy", Tensor(DType::Float32, {1, 4}));
  CommandResult bad =
      run_command(gaf_binary() + " generate " + dir_ + " --input-ids " + dir + "/float_ids.npy", dir + "/bad");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
  EXPECT_NE(bad.err.find("float_ids.npy: is float32 [1,4], expected int64 [batch, P]"), std::string::npos) << bad.err;
}

namespace {

// apps/aot_generate, configured out of tree with find_package(gaf) in scratch folder `name` for
// the decoder in `model_dir` (prompt + kNewTokens positions), built and its binary's path returned;
// "" after a failed step (a test failure already recorded).
std::string built_aot_app(const std::string& name, const std::string& model_dir) {
  const std::string dir = scratch_dir("generate/" + name);
  std::filesystem::remove_all(dir);
  const int64_t max_len = read_npy(model_dir + "/input_ids.npy").shape()[1] + kNewTokens;
  for (const std::string& cmd :
       {"cmake -S " + source_dir() + "/apps/aot_generate -B " + dir + "/build -DCMAKE_BUILD_TYPE=Release" +
            " -DCMAKE_CXX_COMPILER=" + CXX_COMPILER + " -Dgaf_DIR=" + GAF_BUILD_DIR + " -DMODEL_DIR=" + model_dir +
            " -DMAX_LEN=" + std::to_string(max_len),
        "cmake --build " + dir + "/build"}) {
    CommandResult r = run_command(cmd, dir + "/log");
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out << r.err;
    if (r.exit_code) return "";
  }
  return dir + "/build/aot_generate";
}

// The app's 128 greedy tokens from the decoder in `model_dir` equal PyTorch's (expected_tokens.npy).
void expect_aot_app_generates_pytorchs_tokens(const std::string& app, const std::string& model_dir) {
  CommandResult r = run_command(app + " " + model_dir + "/input_ids.npy " + std::to_string(kNewTokens) + " --compare " +
                                    model_dir + "/expected_tokens.npy",
                                app + "_run");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("compare: all 128 tokens equal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode: median"), std::string::npos) << r.out;
}

}  // namespace

// apps/aot_generate with optimum's two files: both compiled at build time into libraries with
// dynamic dims (prompt 1..160, cache 1..159), linked with the plan runtime only (no libHalide),
// generate PyTorch's 128 greedy tokens; an id outside the vocabulary is refused with one line
// naming the file.
TEST_F(GenerateAotApp, GeneratesWithoutHalide) {
  const std::string dir = scratch_dir("generate/aot_app");
  auto step = [&](const std::string& what, const std::string& cmd) {
    CommandResult r = run_command(cmd, dir + "/log");
    EXPECT_EQ(r.exit_code, 0) << what << ": " << cmd << "\n" << r.out << r.err;
    return r;
  };
  const std::string app = built_aot_app("aot_app", dir_);
  if (app.empty()) return;
  CommandResult l = step("ldd", "ldd " + app);
  EXPECT_EQ(l.out.find("libHalide"), std::string::npos) << l.out;
  expect_aot_app_generates_pytorchs_tokens(app, dir_);
  // The step library keeps every cache in a block and appends in place (gaf compile
  // --kv-cache-capacity): its plan lists the caches, each continuing its past.
  std::ifstream plan_file(dir + "/build/step.gaf/step.plan.json");
  std::stringstream plan_text;
  plan_text << plan_file.rdbuf();
  EXPECT_NE(plan_text.str().find("\"kv_caches\""), std::string::npos) << "step.plan.json has no kv_caches";
  EXPECT_NE(plan_text.str().find("\"append\": true"), std::string::npos) << "the step does not append in place";

  // Sampled with a seed: the same tokens as gaf generate (JIT) with the same settings.
  const std::string sampled = " --temperature 2 --top-k 50 --top-p 0.95 --seed 9";
  CommandResult aot = step("sampled", app + " " + dir_ + "/input_ids.npy 32" + sampled);
  CommandResult jit = step("gaf generate", gaf_binary() + " generate " + dir_ + " --input-ids " + dir_ +
                                               "/input_ids.npy --new-tokens 32 -v" + sampled);
  auto generated = [](const std::string& out) {
    const size_t at = out.find("generated: ");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(generated(aot.out), generated(jit.out)) << aot.out << jit.out;
  EXPECT_NE(aot.out.find("temperature 2, top-k 50, top-p 0.95, seed 9"), std::string::npos) << aot.out;

  Tensor outside = read_npy(dir_ + "/input_ids.npy");
  outside.data<int64_t>()[3] = 512;
  write_npy(dir + "/outside.npy", outside);
  CommandResult bad = run_command(app + " " + dir + "/outside.npy 4", dir + "/bad");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
  EXPECT_NE(bad.err.find("outside.npy: id 512 at 3 is outside the vocabulary 0..511"), std::string::npos) << bad.err;
}

// The other two layouts through the same app: one file with past inputs (the prefill compiled
// with the pasts bound to length 0) and optimum's merged file (its If taken each way at compile).
TEST_F(GenerateAotAppSingleFile, GeneratesPyTorchsTokens) {
  const std::string app = built_aot_app("aot_app_single_build", dir_);
  if (!app.empty()) expect_aot_app_generates_pytorchs_tokens(app, dir_);
}

TEST_F(GenerateAotAppMerged, GeneratesPyTorchsTokens) {
  const std::string app = built_aot_app("aot_app_merged_build", dir_);
  if (!app.empty()) expect_aot_app_generates_pytorchs_tokens(app, dir_);
}
