// The model zoo beyond BERT: each architecture of test/models/export_*.py (GPT-2-style decoder,
// Llama-style decoder, ViT-style encoder, an encoder whose attention is spelled unlike BERT's) is
// exported by Debian's python3-torch at opsets 14 and 17 with seeded random weights, loaded through
// the Engine and run with fusion on and off. Each must reproduce PyTorch's output within a
// relative L2 error of 1e-5 (||ours - torch||_2 <= 1e-5 ||torch||_2, fp32). Then each model's plan
// is stated: the groups (kernels) that hold nodes of each layer, by kind and rule. Skipped when
// python3-torch or python3-onnx is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr double kMaxRelativeL2 = 1e-5;

bool torch_available() {
  static const bool ok =
      run_command(std::string(python()) + " -c 'import torch, onnx'", scratch_dir("zoo_probe")).exit_code == 0;
  return ok;
}

// Exports test/models/export_<model>.py at `opset` once per process; returns its folder
// (model.onnx, input.npy, expected.npy).
std::string exported(const std::string& model, int opset) {
  static std::map<std::string, std::string> done;
  const std::string key = model + "_opset" + std::to_string(opset);
  auto it = done.find(key);
  if (it != done.end()) return it->second;
  const std::string dir = scratch_dir("zoo/" + key);
  CommandResult gen = run_command(std::string(python()) + " " + source_dir() + "/test/models/export_" + model +
                                      ".py " + dir + " " + std::to_string(opset),
                                  dir + "_gen");
  if (gen.exit_code != 0) throw std::runtime_error("export_" + model + ".py failed: " + gen.err);
  return done[key] = dir;
}

double relative_l2(const Tensor& got, const Tensor& want) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.as_double(i), w = want.as_double(i);
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return std::sqrt(diff) / std::sqrt(norm);
}

EngineOptions options(bool fused) {
  EngineOptions o;
  o.fusion.enabled = fused;
  return o;
}

// "kind/rule" of every group holding a node whose name contains `layer` (the exporter names
// nodes by module path, e.g. "/h.0/attn/MatMul"), sorted. A group reaching into the next layer
// (a pre-LN block's residual Add fused with the next LayerNorm) counts for both.
std::vector<std::string> layer_groups(const Engine& e, const FusionPlan& p, const std::string& layer) {
  std::vector<std::string> out;
  for (const FusionGroup& g : p.groups) {
    bool touches = false;
    for (int n : g.nodes) touches = touches || e.graph().nodes()[n].name.find(layer) != std::string::npos;
    if (touches) out.push_back(std::string(fusion_kind_name(g.kind)) + "/" + g.rule_label());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "\n  " + x;
  return s;
}

struct ZooCase {
  std::string model;
  int opset;
};

std::string case_name(const ::testing::TestParamInfo<ZooCase>& i) {
  return i.param.model + "_opset" + std::to_string(i.param.opset);
}

class Zoo : public ::testing::TestWithParam<ZooCase> {
 protected:
  void SetUp() override {
    if (!torch_available()) GTEST_SKIP() << "python3-torch or python3-onnx is missing (apt-get install python3-torch python3-onnx)";
    dir_ = exported(GetParam().model, GetParam().opset);
  }
  std::string dir_;
};

}  // namespace

TEST_P(Zoo, MatchesPyTorchFusedAndUnfused) {
  const Tensor input = read_npy(dir_ + "/input.npy"), want = read_npy(dir_ + "/expected.npy");
  const TensorMap inputs{{"input", input}};
  for (bool fused : {true, false}) {
    Engine e(dir_ + "/model.onnx", options(fused), inputs);
    TensorMap out = e.run(inputs);
    ASSERT_EQ(out.count("output"), 1u);
    const Tensor& got = out.at("output");
    ASSERT_EQ(got.shape(), want.shape()) << (fused ? "fused" : "unfused");
    const double err = relative_l2(got, want);
    EXPECT_LE(err, kMaxRelativeL2) << (fused ? "fused" : "unfused");
    std::printf("[zoo] %s opset %d %s: %zu kernels, relative L2 error %.2e\n", GetParam().model.c_str(),
                GetParam().opset, fused ? "fused" : "unfused", e.plan().groups.size(), err);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo,
                         ::testing::Values(ZooCase{"gpt2", 14}, ZooCase{"gpt2", 17}, ZooCase{"llama", 14},
                                           ZooCase{"llama", 17}, ZooCase{"vit", 14}, ZooCase{"vit", 17},
                                           ZooCase{"encoder_qscale", 14}, ZooCase{"encoder_qscale", 17}),
                         case_name);
