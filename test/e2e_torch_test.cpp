// End to end on models PyTorch really exports: a 2-layer BERT-style encoder (embeddings, masked
// attention, GELU erf, post-LN) exported by Debian's python3-torch with torch.onnx.export at opset
// 14 (LayerNorm decomposed) and 17 (LayerNormalization), with dynamic batch/seq axes so that the
// Shape->Gather->Unsqueeze->Concat->Reshape chains must fold. `gaf run` must reproduce PyTorch's
// output. Tolerance: |ours - torch| <= 1e-4 + 1e-4 |torch| (fp32; erf approximation and summation
// order differ from PyTorch's kernels).
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/tensor_io.h"
#include "test/cli_util.h"
#include "test/tensor_compare.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

class TorchExport : public ::testing::TestWithParam<int> {};

}  // namespace

TEST_P(TorchExport, GafRunReproducesPyTorch) {
  int opset = GetParam();
  std::string dir = scratch_dir("torch_bert_opset" + std::to_string(opset));
  CommandResult gen = run_command(
      std::string(python()) + " " + source_dir() + "/test/models/export_bert.py " + dir + " " + std::to_string(opset),
      dir + "_gen");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string out = dir + "/out";
  std::filesystem::create_directories(out);
  CommandResult r =
      run_command(gaf_binary() + " run " + dir + "/model.onnx --input input_ids=" + dir +
                      "/input_ids.npy --input attention_mask=" + dir + "/attention_mask.npy --output-dir " + out,
                  dir + "_run");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  Tensor got = read_npy(out + "/last_hidden_state.npy");
  Tensor want = read_npy(dir + "/expected.npy");
  EXPECT_EQ(compare_tensors(got, want, Tolerance{1e-4, 1e-4}), "");
  // The dynamic-shape chains folded away: no Shape op is left to run.
  CommandResult info =
      run_command(gaf_binary() + " info " + dir + "/model.onnx --dim batch=2 --dim seq=16", dir + "_info");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.find("  Shape x"), std::string::npos) << info.out;
}

INSTANTIATE_TEST_SUITE_P(Opsets, TorchExport, ::testing::Values(14, 17));

// Whole models as users export them, in batches (issue #38). At batch 1, 4 and 16 (rows of real
// length 32, 24, 16, 5, repeated, the rest padding in the mask), fused and unfused reproduce
// PyTorch on every output (same tolerance), and the plan has the groups the issue asks for at
// every batch: one attention group per layer whatever the masks (the batched attention's row
// blocks stay within their (batch, head)), the embeddings with their LayerNorm as one group, the
// mask bias once per forward, the pooler's [CLS] Gather + Linear (its Gemm read as MatMul + Add) + Tanh as one.
namespace {

struct WholeModel {
  std::string script;                                        // in test/models
  std::string options;                                       // after OUT_DIR (the batch and lengths are appended)
  bool padded;                                               // rows padded: --lengths
  std::vector<std::string> inputs;                           // NAME, read from NAME.npy
  std::vector<std::pair<std::string, std::string>> outputs;  // output -> PyTorch's file (no .npy)
  std::vector<std::string> plan_text;                        // each found in `gaf plan --groups`
};

std::string lengths_for(int batch) {
  std::string lengths;
  for (int i = 0; i < batch; ++i) lengths += (i ? "," : "") + std::to_string(std::vector<int>{32, 24, 16, 5}[i % 4]);
  return lengths;
}

}  // namespace

TEST(TorchExportBatches, WholeModelsFusedAndUnfusedReproducePyTorch) {
  const std::vector<WholeModel> models = {
      // Hugging Face BertModel's spelling: token types, a finfo.min mask bias, the pooler.
      {"export_bert.py",
       "17 --seq 32 --full",
       true,
       {"input_ids", "attention_mask", "token_type_ids"},
       {{"last_hidden_state", "expected"}, {"pooler_output", "expected_pooler"}},
       {"Detected 2 Attention fusion opportunities", "Detected 1 MatMul+Tanh fusion opportunity",
        // word + token type + position embeddings, their adds and the LayerNorm
        "normalization     elementwise_chain+generic  LayerNorm            5",
        // the mask bias: (1 - mask) * min once, read by both layers
        "elementwise       elementwise_chain+generic  elementwise          5"}},
      // GPT-2's causal Where and a padding bias Add, both inside the attention group; its Split
      // of q, k, v too. Each projection + residual carries the next LayerNorm (13 kernels, 16
      // with the LayerNorms apart).
      {"export_gpt_padded.py",
       "17 --seq 32",
       true,
       {"input_ids", "attention_mask"},
       {{"logits", "expected"}},
       {"Detected 2 Attention fusion opportunities", "13 kernels for 79 ops"}},
      // A batch of images: the Conv patch embedding, the class token expanded over the batch.
      {"export_vit.py",
       "17",
       false,
       {"input"},
       {{"output", "expected"}},
       {"Detected 2 Attention fusion opportunities"}},
  };
  for (const WholeModel& m : models) {
    for (int batch : {1, 4, 16}) {
      const std::string b = std::to_string(batch);
      const std::string dir = scratch_dir("torch_" + m.script.substr(0, m.script.size() - 3) + "_batch" + b);
      CommandResult gen =
          run_command(std::string(python()) + " " + source_dir() + "/test/models/" + m.script + " " + dir + " " +
                          m.options + " --batch " + b + (m.padded ? " --lengths " + lengths_for(batch) : ""),
                      dir + "_gen");
      ASSERT_EQ(gen.exit_code, 0) << gen.err;
      std::string inputs, dims = " --dim batch=" + b + (m.padded ? " --dim seq=32" : "");
      for (const std::string& in : m.inputs) inputs += " --input " + in + "=" + dir + "/" + in + ".npy";
      for (const std::string fusion : {"", " --no-fusion"}) {
        const std::string out = dir + "/out" + (fusion.empty() ? "" : "_unfused");
        std::filesystem::create_directories(out);
        CommandResult r = run_command(
            gaf_binary() + " run " + dir + "/model.onnx" + inputs + " --output-dir " + out + fusion, dir + "_run");
        ASSERT_EQ(r.exit_code, 0) << m.script << " batch " << batch << fusion << ": " << r.err << r.out;
        for (const auto& [name, expected] : m.outputs)
          EXPECT_EQ(compare_tensors(read_npy(out + "/" + name + ".npy"), read_npy(dir + "/" + expected + ".npy"),
                                    Tolerance{1e-4, 1e-4}),
                    "")
              << m.script << " batch " << batch << fusion << " output " << name;
      }
      CommandResult plan = run_command(gaf_binary() + " plan " + dir + "/model.onnx --groups" + dims, dir + "_plan");
      ASSERT_EQ(plan.exit_code, 0) << plan.err;
      for (const std::string& text : m.plan_text)
        EXPECT_NE((plan.out + plan.err).find(text), std::string::npos)
            << m.script << " batch " << batch << ": no '" << text << "' in\n"
            << plan.out << plan.err;
    }
  }
}

// One compiled library for every batch and length (#38): the whole BertModel compiled once by gaf
// compile with batch and seq both symbolic (--dim batch=1..16 --dim seq=1..64; examples/aot_onnx
// linked with the plan runtime only) reproduces PyTorch at batch 4 x 32 (padded rows) and at
// batch 2 x 16 from the same weights (the exports' seeded weights do not depend on the shapes).
TEST(TorchExportBatches, OneLibraryWithSymbolicBatchAndSeqRunsEveryShape) {
  const std::string base = scratch_dir("torch_bert_dynamic_library");
  std::filesystem::remove_all(base);
  const std::vector<std::pair<std::string, std::string>> shapes = {{"b4", "--seq 32 --batch 4 --lengths 32,24,16,5"},
                                                                   {"b2", "--seq 16 --batch 2 --lengths 16,9"}};
  for (const auto& [name, options] : shapes) {
    CommandResult gen = run_command(std::string(python()) + " " + source_dir() + "/test/models/export_bert.py " + base +
                                        "/" + name + " 17 --full " + options,
                                    base + "/" + name + "_gen");
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
  }
  const std::string app = built_aot_onnx_app(base, base + "/b4/model.onnx", "--dim;batch=1..16;--dim;seq=1..64");
  ASSERT_FALSE(app.empty());
  for (const auto& [name, options] : shapes) {
    const std::string dir = base + "/" + name, out = dir + "/aot";
    std::filesystem::create_directories(out);
    CommandResult r = run_command(app + " " + dir + " " + out, dir + "_run");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const auto& [output, expected] : std::vector<std::pair<std::string, std::string>>{
             {"last_hidden_state", "expected"}, {"pooler_output", "expected_pooler"}})
      EXPECT_EQ(compare_tensors(read_npy(out + "/" + output + ".npy"), read_npy(dir + "/" + expected + ".npy"),
                                Tolerance{1e-4, 1e-4}),
                "")
          << name << " output " << output;
  }
}
