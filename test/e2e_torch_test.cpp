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
  CommandResult gen = run_command(std::string(python()) + " " + source_dir() +
                                      "/test/models/export_bert.py " + dir + " " + std::to_string(opset),
                                  dir + "_gen");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string out = dir + "/out";
  std::filesystem::create_directories(out);
  CommandResult r = run_command(gaf_binary() + " run " + dir + "/model.onnx --input input_ids=" + dir +
                                    "/input_ids.npy --input attention_mask=" + dir +
                                    "/attention_mask.npy --output-dir " + out,
                                dir + "_run");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  Tensor got = read_npy(out + "/last_hidden_state.npy");
  Tensor want = read_npy(dir + "/expected.npy");
  EXPECT_EQ(compare_tensors(got, want, Tolerance{1e-4, 1e-4}), "");
  // The dynamic-shape chains folded away: no Shape op is left to run.
  CommandResult info = run_command(gaf_binary() + " info " + dir + "/model.onnx --dim batch=2 --dim seq=16",
                                   dir + "_info");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.find("  Shape x"), std::string::npos) << info.out;
}

INSTANTIATE_TEST_SUITE_P(Opsets, TorchExport, ::testing::Values(14, 17));

// Whole-model batches of padded sentences (issue #38): batch 4 and 16, each row's real length
// from 32, 24, 16, 5 (repeated) and the rest padding in the mask. Fused and unfused reproduce
// PyTorch (same tolerance); the plan keeps one attention group per layer at every batch (the
// batched attention's row blocks stay within their (batch, head)).
TEST(TorchExportBatches, PaddedRowsFusedAndUnfusedReproducePyTorch) {
  for (int batch : {4, 16}) {
    std::string dir = scratch_dir("torch_bert_batch" + std::to_string(batch));
    std::string lengths;
    for (int i = 0; i < batch; ++i) lengths += (i ? "," : "") + std::to_string(std::vector<int>{32, 24, 16, 5}[i % 4]);
    CommandResult gen = run_command(std::string(python()) + " " + source_dir() + "/test/models/export_bert.py " + dir +
                                        " 17 --seq 32 --batch " + std::to_string(batch) + " --lengths " + lengths,
                                    dir + "_gen");
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    Tensor want = read_npy(dir + "/expected.npy");
    for (const std::string fusion : {"", " --no-fusion"}) {
      std::string out = dir + "/out" + (fusion.empty() ? "" : "_unfused");
      std::filesystem::create_directories(out);
      CommandResult r = run_command(gaf_binary() + " run " + dir + "/model.onnx --input input_ids=" + dir +
                                        "/input_ids.npy --input attention_mask=" + dir +
                                        "/attention_mask.npy --output-dir " + out + fusion,
                                    dir + "_run");
      ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
      EXPECT_EQ(compare_tensors(read_npy(out + "/last_hidden_state.npy"), want, Tolerance{1e-4, 1e-4}), "")
          << "batch " << batch << fusion;
    }
    CommandResult plan = run_command(gaf_binary() + " plan " + dir + "/model.onnx --dim batch=" + std::to_string(batch) +
                                         " --dim seq=32",
                                     dir + "_plan");
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    EXPECT_NE((plan.out + plan.err).find("Detected 2 Attention fusion opportunities"), std::string::npos)
        << plan.out << plan.err;
  }
}
