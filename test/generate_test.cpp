// Greedy decoding with a KV cache (engine/generator.h, gaf generate): the GPT-2-style decoder of
// test/models/export_gpt2_kv.py, exported as two ONNX files (prefill, step with past) with
// seeded weights, must generate exactly PyTorch's 128 greedy tokens with its own KV cache; the
// CLI checks them with --compare (exit 3 naming the first differing token) and refuses bad input
// with one line (exit 1). Skipped when python3-torch or python3-onnx is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "engine/generator.h"
#include "fusion/frontend/onnx_import.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr int64_t kNewTokens = 128;

bool torch_available() {
  static const bool ok =
      run_command(std::string(python()) + " -c 'import torch, onnx'", scratch_dir("generate_probe")).exit_code == 0;
  return ok;
}

// The two decoder files, input_ids.npy (1 x 32) and expected_tokens.npy, exported once per process.
const std::string& exported() {
  static const std::string dir = [] {
    const std::string d = scratch_dir("generate/gpt2_kv");
    CommandResult gen = run_command(std::string(python()) + " " + source_dir() + "/test/models/export_gpt2_kv.py " + d +
                                        " --new-tokens " + std::to_string(kNewTokens),
                                    d + "_gen");
    if (gen.exit_code != 0) throw std::runtime_error("export_gpt2_kv.py failed: " + gen.err);
    return d;
  }();
  return dir;
}

class Generate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch_available()) GTEST_SKIP() << "python3-torch or python3-onnx is missing (apt-get install python3-torch python3-onnx)";
    dir_ = exported();
  }
  std::string dir_;
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
}

// The runtime's KV cache: a step engine with the caches bound appends each token's keys and
// values into the block the prefill allocated (the same storage every step, no copy of the
// past), and its logits and caches equal a step engine without caches, which concatenates
// (tolerance 1e-5 of the largest logit: the same kernels on the same values, only the layout
// of the cache differs).
TEST_F(Generate, KvCacheIsAppendedInPlace) {
  const Tensor prompt = read_npy(dir_ + "/input_ids.npy");
  const int64_t max_len = prompt.shape()[1] + 8;
  const Graph prefill_graph = import_onnx_file(dir_ + "/decoder_model.onnx");
  const Graph step_graph = import_onnx_file(dir_ + "/decoder_with_past_model.onnx");
  const DecoderDims dims = decoder_dims(prefill_graph, step_graph, dir_, 1, max_len);
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
  // A cache longer than its block is refused with a line naming it.
  TensorMap oc;
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
// changed — tokens 0..4 agree, then exit 3 with one line naming token 5.
TEST_F(Generate, CliComparesTokensAndRefusesBadInput) {
  const std::string dir = scratch_dir("generate/cli");
  std::filesystem::create_directories(dir);
  Tensor wrong = read_npy(dir_ + "/expected_tokens.npy");
  const int64_t want = wrong.data<int64_t>()[5];
  wrong.data<int64_t>()[5] = (want + 1) % 512;
  write_npy(dir + "/wrong.npy", wrong);
  CommandResult differs = run_command(gaf_binary() + " generate " + dir_ + " --input-ids " + dir_ +
                                          "/input_ids.npy --new-tokens 8 --compare " + dir + "/wrong.npy",
                                      dir + "/differs");
  EXPECT_EQ(differs.exit_code, 3) << differs.err;
  EXPECT_EQ(gaf_lines(differs.err), 1) << differs.err;
  EXPECT_NE(differs.err.find("new token 5 is " + std::to_string(want) + ", " + dir + "/wrong.npy has " +
                             std::to_string((want + 1) % 512)),
            std::string::npos)
      << differs.err;
  EXPECT_NE(differs.out.find("time to first token"), std::string::npos) << differs.out;

  // Float prompt ids: exit 1, one line naming the file, before any model loads.
  write_npy(dir + "/float_ids.npy", Tensor(DType::Float32, {1, 4}));
  CommandResult bad = run_command(gaf_binary() + " generate " + dir_ + " --input-ids " + dir + "/float_ids.npy", dir + "/bad");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
  EXPECT_NE(bad.err.find("float_ids.npy: is float32 [1,4], expected int64 [batch, P]"), std::string::npos) << bad.err;
}
