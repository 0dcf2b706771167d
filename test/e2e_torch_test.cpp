// End to end on models PyTorch really exports: a 2-layer BERT-style encoder (embeddings, masked
// attention, GELU erf, post-LN) exported by Debian's python3-torch with torch.onnx.export at opset
// 14 (LayerNorm decomposed) and 17 (LayerNormalization), with dynamic batch/seq axes so that the
// Shape->Gather->Unsqueeze->Concat->Reshape chains must fold. `gaf run` must reproduce PyTorch's
// output. Tolerance: |ours - torch| <= 1e-4 + 1e-4 |torch| (fp32; erf approximation and summation
// order differ from PyTorch's kernels).
#include <filesystem>

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
