// The model zoo beyond BERT: each architecture of test/models/export_*.py (GPT-2-style decoder,
// Llama-style decoder, ViT-style encoder, an encoder whose attention is spelled unlike BERT's, a
// T5-style encoder, a Falcon-style decoder, PyTorch's own nn.TransformerEncoder, an encoder written
// with torch.einsum, ResNet-style,
// MobileNetV2-style and ConvNeXt-style CNNs, a U-Net-style
// encoder-decoder) is
// exported by Debian's python3-torch at opsets 14 and 17 with seeded random weights, loaded through
// the Engine and run with fusion on and off. Each must reproduce PyTorch's output within a
// relative L2 error of 1e-5 (||ours - torch||_2 <= 1e-5 ||torch||_2, fp32), and its fused plan is
// stated: the groups (kernels) that hold nodes of each layer, by kind and rule, and the merges
// that matter (attention whole under each mask spelling, epilogues). Skipped when python3-torch
// or python3-onnx is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "fusion/ir/builder.h"
#include "test/planner_test_util.h"
#include "runtime/tensor_io.h"
#include "test/cli_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr double kMaxRelativeL2 = 1e-5;
// The opsets torch 1.13 exports each model with: 14 (LayerNorm decomposed) and 17 (one
// LayerNormalization op). Llama has no LayerNorm, and torch writes the same graph at both
// (checked when the zoo was written), so it runs at 17 only: the suite stays under a minute.
const std::map<std::string, std::vector<int>> kOpsets{
    {"gpt2", {14, 17}},
    {"llama", {17}},
    {"vit", {14, 17}},
    {"encoder_qscale", {14, 17}},
    // CNNs: torch folds their eval-mode BatchNorms into the Convs at either opset; 17 only.
    {"resnet", {17}},
    {"mobilenet", {17}},
    {"convnext", {17}},
    {"unet", {17}},
    {"t5", {17}},
    {"falcon", {17}},
    {"torch_encoder", {17}},
    {"einsum_encoder", {17}}};

bool torch_available() {
  static const bool ok =
      run_command(std::string(python()) + " -c 'import torch, onnx'", scratch_dir("zoo_probe")).exit_code == 0;
  return ok;
}

// Exports test/models/export_<model>.py at every opset of kOpsets once per process (one
// Python start per model); returns the folder of `opset` (model.onnx, input.npy, expected.npy).
std::string exported(const std::string& model, int opset) {
  static std::map<std::string, std::string> done;
  const std::string dir = scratch_dir("zoo/" + model);
  if (!done.count(model)) {
    std::string cmd = std::string(python()) + " " + source_dir() + "/test/models/export_" + model + ".py " + dir;
    for (int opset : kOpsets.at(model)) cmd += " " + std::to_string(opset);
    CommandResult gen = run_command(cmd, dir + "_gen");
    if (gen.exit_code != 0) throw std::runtime_error("export_" + model + ".py failed: " + gen.err);
    done[model] = dir;
  }
  return kOpsets.at(model).size() == 1 ? dir : dir + "/opset" + std::to_string(opset);
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
    if (touches) out.push_back(std::string(fusion_kind_name(g.kind)) + "/" + (g.rule.empty() ? "-" : g.rule_label()));
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

std::vector<ZooCase> all_cases() {
  std::vector<ZooCase> cases;
  for (const auto& [model, opsets] : kOpsets)
    for (int opset : opsets) cases.push_back({model, opset});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<ZooCase>& i) {
  return i.param.model + "_opset" + std::to_string(i.param.opset);
}

class Zoo : public ::testing::TestWithParam<ZooCase> {
 protected:
  void SetUp() override {
    if (!torch_available())
      GTEST_SKIP() << "python3-torch or python3-onnx is missing (apt-get install python3-torch python3-onnx)";
    dir_ = exported(GetParam().model, GetParam().opset);
  }
  std::string dir_;
};

}  // namespace

// ---- The plans -------------------------------------------------------------------------------
// Per layer: the groups holding its nodes, as "kind/rule" (rule_label: "+generic" when generic
// grouping grew the rule's group). The LayerNorm rule depends on the opset: LayerNormalization
// (17) is matched by norm_op, PyTorch's decomposed form (14) by layernorm_decomposed; the kernel
// count per layer must not.

namespace {

struct Planned {
  Engine* engine = nullptr;
  const FusionPlan* plan = nullptr;
  std::string ln;  // the LayerNorm rule at this opset
};

// The group holding the node named exactly `name`.
const FusionGroup& group_of(const Planned& p, const std::string& name) {
  const auto& nodes = p.engine->graph().nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return p.plan->groups[p.plan->group_of_node[i]];
  throw std::runtime_error("no node named " + name);
}

void expect_layer(const Planned& p, const std::string& layer, std::vector<std::string> want) {
  std::sort(want.begin(), want.end());
  const std::vector<std::string> got = layer_groups(*p.engine, *p.plan, layer);
  EXPECT_EQ(got, want) << layer << ": " << got.size() << " groups:" << joined(got) << "\nexpected " << want.size()
                       << ":" << joined(want);
}

// The plan of model `c`, stated.
void expect_plan(const ZooCase& c, Engine& e) {
  const Planned p{&e, &e.plan(), c.opset >= 17 ? "norm_op" : "layernorm_decomposed"};
  const std::string ln = p.ln;
  if (c.model == "gpt2") {
    // 5 kernels per layer: c_attn + bias, attention whole (the Split of Q|K|V and the heads'
    // Reshape/Transpose as its layout prologues), c_proj + bias + residual + ln_2, c_fc + bias +
    // tanh GELU, c_proj + bias + residual + the next layer's ln_1 (the last one's ln_f). Pre-LN:
    // the residual sum feeds the next LN and the next residual, so it leaves the projection's
    // group as a second output beside the normalised rows (rule matmul_layernorm, role residual).
    // 12 kernels in all: with the embedding group (ln_1 of layer 0) and the LM head.
    const std::vector<std::string> layer = {
        "matmul_epilogue/matmul_epilogue", "matmul_epilogue/attention+generic", "matmul_epilogue/matmul_layernorm",
        "matmul_epilogue/matmul_epilogue+generic", "matmul_epilogue/matmul_layernorm"};
    std::vector<std::string> first = layer;
    first.push_back("normalization/" + ln + "+generic");  // ln_1 with the embeddings' Gathers and Add
    expect_layer(p, "/h.0/", first);
    std::vector<std::string> second = layer;
    second.push_back("matmul_epilogue/matmul_layernorm");  // the previous one's FFN2, with this one's first norm
    expect_layer(p, "/h.1/", second);
    const FusionGroup& proj = group_of(p, "/h.0/attn/c_proj/MatMul");
    EXPECT_EQ(proj.rule, "matmul_layernorm");
    EXPECT_EQ(proj.outputs.size(), 2u) << "the residual sum and the normalised rows";
    EXPECT_EQ(proj.kernel.label, "MatMul+LayerNorm");
    EXPECT_EQ(p.plan->groups.size(), 12u);
    EXPECT_EQ(group_of(p, "/h.0/attn/Split").rule, "attention");
    // Both mask spellings keep attention whole: the bool Where mask (layer 0) and the additive
    // finfo.min triangle (layer 1) run with the scores, Softmax and probs x V in one kernel.
    for (const std::string mask : {"/h.0/attn/Where", "/h.1/attn/Add"}) {
      const FusionGroup& g = group_of(p, mask);
      EXPECT_EQ(g.rule, "attention") << mask;
      const std::string layer = mask.substr(0, 5);
      EXPECT_EQ(&group_of(p, layer + "attn/Softmax"), &g) << mask;
      EXPECT_EQ(&group_of(p, layer + "attn/MatMul_1"), &g) << mask << ": probs x V";
    }
    // The tanh GELU, spelled with Pow(x, 3), is c_fc's epilogue.
    EXPECT_EQ(&group_of(p, "/h.0/Pow"), &group_of(p, "/h.0/c_fc/MatMul"));
    EXPECT_EQ(&group_of(p, "/h.0/Tanh"), &group_of(p, "/h.0/c_fc/MatMul"));
  } else if (c.model == "llama") {
    // 5 kernels per layer: Q, K and V bias-free as one horizontal MatMul with Q's and K's rotary
    // embeddings, K's and V's repeat to 4 heads as its epilogues; attention whole; o_proj +
    // residual + post_attention_layernorm; the gated MLP (gate_proj + SiLU times up_proj, rule
    // gated_mlp, not the horizontal one); down_proj + residual + the next input_layernorm (the
    // last one's final norm). Layer 0's input_layernorm runs with the embedding Gather.
    const std::vector<std::string> layer = {"horizontal_matmul/horizontal_matmul+generic",
                                            "matmul_epilogue/attention+generic", "matmul_epilogue/matmul_layernorm",
                                            "matmul_epilogue/gated_mlp", "matmul_epilogue/matmul_layernorm"};
    std::vector<std::string> first = layer;
    first.push_back("normalization/rmsnorm_decomposed+generic");
    expect_layer(p, "/layers.0/", first);
    std::vector<std::string> second = layer;
    second.push_back("matmul_epilogue/matmul_layernorm");  // the previous one's FFN2, with this one's first norm
    expect_layer(p, "/layers.1/", second);
    EXPECT_EQ(p.plan->groups.size(), 11u);
    const FusionGroup& o_proj = group_of(p, "/layers.0/self_attn/o_proj/MatMul");
    EXPECT_EQ(o_proj.kernel.label, "MatMul+RMSNorm");
    // The residual sum leaves the group beside the normalised rows; the mean of squares is still
    // computed per row of those rows, not in a loop of its own at root.
    int means = 0;
    for (const FuncDecision& d : o_proj.decisions)
      if (d.value.find("ReduceMean") != std::string::npos) {
        ++means;
        EXPECT_EQ(d.decision, ComputeDecision::ComputeAt) << d.value << ": " << d.reason;
        ASSERT_GE(d.at_output, 0);
        const int residual = o_proj.role_node(MemberRole::Residual);
        ASSERT_GE(residual, 0);
        EXPECT_NE(o_proj.outputs[static_cast<size_t>(d.at_output)],
                  p.engine->graph().nodes()[static_cast<size_t>(residual)].outputs[0])
            << "the normalised rows, not the residual sum";
      }
    EXPECT_EQ(means, 1);
    // Attention whole under the additive -inf mask, and RMSNorm's rsqrt (exported as Div(1, .))
    // matched as RMSNorm.
    EXPECT_EQ(group_of(p, "/layers.0/self_attn/Softmax").rule, "attention");
    EXPECT_EQ(&group_of(p, "/layers.0/self_attn/Add_2"), &group_of(p, "/layers.0/self_attn/Softmax"));
    EXPECT_EQ(group_of(p, "/layers.1/input_layernorm/Div").rule, "matmul_layernorm");
    // SwiGLU: gate_proj, up_proj and the product silu(gate) * up in one kernel.
    const FusionGroup& mlp = group_of(p, "/layers.0/mlp/Mul_1");
    EXPECT_EQ(mlp.rule, "gated_mlp");
    EXPECT_EQ(&group_of(p, "/layers.0/mlp/gate_proj/MatMul"), &mlp);
    EXPECT_EQ(&group_of(p, "/layers.0/mlp/up_proj/MatMul"), &mlp);
    EXPECT_EQ(mlp.kernel.label, "GatedMLP");
  } else if (c.model == "t5") {
    // 5 kernels per layer: Q, K and V bias-free as one horizontal MatMul (the heads'
    // Reshape/Transpose as attention's prologue); attention whole with no scale, the position bias
    // (folded at load: one constant every layer reads) and the Softmax's float Cast bypassed; o +
    // residual + the MLP's RMSNorm (its float Cast bypassed); the gated tanh-GELU MLP (its x^3
    // spelled x * (x * x)); wo + residual + the next layer's RMSNorm (the last one's final norm).
    // 11 kernels with layer 0's first RMSNorm.
    const std::vector<std::string> layer = {"horizontal_matmul/horizontal_matmul", "matmul_epilogue/attention+generic",
                                            "matmul_epilogue/matmul_layernorm", "matmul_epilogue/gated_mlp",
                                            "matmul_epilogue/matmul_layernorm"};
    std::vector<std::string> first = layer;
    first.push_back("normalization/rmsnorm_decomposed");
    expect_layer(p, "/layers.0/", first);
    std::vector<std::string> second = layer;
    second.push_back("matmul_epilogue/matmul_layernorm");  // the previous one's FFN2, with this one's first norm
    expect_layer(p, "/layers.1/", second);
    EXPECT_EQ(p.plan->groups.size(), 11u);
    EXPECT_EQ(group_of(p, "/layers.0/attn/Add").rule, "attention");  // the position bias
    EXPECT_EQ(group_of(p, "/layers.1/mlp/Tanh").rule, "gated_mlp");
  } else if (c.model == "vit") {
    // 5 kernels per block: qkv + bias, attention whole (qkv's Reshape/Transpose and the three
    // one-entry Gathers q, k, v = qkv[0..2] as its layout prologues; the scale as Mul, no mask),
    // proj + bias + residual + norm2, fc1 + bias + GELU, fc2 + bias + residual + the next block's
    // norm1 (the last block's final LN). Block 0's norm1 runs with the class token's Concat and
    // the position embedding's Add.
    const std::vector<std::string> block = {"matmul_epilogue/matmul_epilogue", "matmul_epilogue/attention+generic",
                                            "matmul_epilogue/matmul_layernorm", "matmul_epilogue/matmul_epilogue",
                                            "matmul_epilogue/matmul_layernorm"};
    std::vector<std::string> first = block;
    first.push_back("normalization/" + ln + "+generic");
    expect_layer(p, "/blocks.0/", first);
    std::vector<std::string> second = block;
    second.push_back("matmul_epilogue/matmul_layernorm");  // the previous one's FFN2, with this one's first norm
    expect_layer(p, "/blocks.1/", second);
    for (const std::string gather : {"/blocks.0/attn/Gather", "/blocks.0/attn/Gather_1", "/blocks.0/attn/Gather_2"})
      EXPECT_EQ(group_of(p, gather).rule, "attention") << gather;
    // The patch embedding: the Conv and its flatten/transpose to tokens, stored once as rows (with
    // the class token and the position embedding as well, the Conv's output would be a buffer
    // inside the kernel, written and read again: no traffic saved).
    EXPECT_EQ(group_of(p, "/patch_embed/Conv").nodes.size(), 3u);
    EXPECT_EQ(p.plan->groups.size(), 12u);
  } else if (c.model == "resnet") {
    // A kernel per Conv with its activation: the stem's Conv + ReLU, then MaxPool; per
    // bottleneck conv1 + ReLU, conv2 + ReLU, conv3 alone, and the downsample Conv + the residual
    // Add + ReLU (the Add reads conv3's output). 12 kernels with the pooled Gemm head.
    expect_layer(p, "/stem/", {"elementwise/generic", "single/-"});
    for (const std::string block : {"/blocks/blocks.0/", "/blocks/blocks.1/"}) {
      expect_layer(p, block,
                   {"elementwise/generic", "elementwise/generic", "single/-", "elementwise/elementwise_chain+generic"});
      EXPECT_EQ(&group_of(p, block + "Add"), &group_of(p, block + "down/down.0/Conv")) << block;
      EXPECT_EQ(&group_of(p, block + "Relu_2"), &group_of(p, block + "down/down.0/Conv")) << block;
    }
    EXPECT_EQ(group_of(p, "/GlobalAveragePool").kind, FusionKind::Normalization);
    EXPECT_EQ(p.plan->groups.size(), 12u);
  } else if (c.model == "mobilenet") {
    // A kernel per Conv with its ReLU6 (Clip) or, for a projection with a residual, the Add:
    // the expansion, the depthwise and the projection of an inverted residual are three kernels.
    expect_layer(p, "/features/features.3/", {"elementwise/generic", "elementwise/generic", "elementwise/generic"});
    EXPECT_EQ(&group_of(p, "/features/features.3/Add"), &group_of(p, "/features/features.3/body/body.2/body.2.0/Conv"));
    EXPECT_EQ(&group_of(p, "/features/features.3/body/body.1/body.1.2/Clip"),
              &group_of(p, "/features/features.3/body/body.1/body.1.0/Conv"));
    EXPECT_EQ(p.plan->groups.size(), 12u);
  } else if (c.model == "convnext") {
    // 5 kernels per block: the 7x7 depthwise Conv; the permute to NHWC with the LayerNorm;
    // pwconv1 + bias + GELU; pwconv2 + bias; the layer scale, the permute back and the residual
    // Add, with the next downsampling's channels-first LayerNorm (mean and variance over axis 1,
    // matched as a LayerNorm) where one follows. 15 kernels with the stem, the downsampling Conv,
    // the head's LayerNorm and Linear.
    expect_layer(p, "/features/features.2/",
                 {"single/-", "normalization/norm_op+generic", "matmul_epilogue/matmul_epilogue",
                  "matmul_epilogue/matmul_epilogue", "normalization/layernorm_decomposed+generic"});
    EXPECT_EQ(&group_of(p, "/features/features.2/Add_1"), &group_of(p, "/features/features.3/ReduceMean"));
    EXPECT_EQ(&group_of(p, "/features/features.2/pwconv1/MatMul"), &group_of(p, "/features/features.2/Erf"));
    EXPECT_EQ(p.plan->groups.size(), 15u);
  } else if (c.model == "unet") {
    // Per encoder level two Conv + ReLU kernels and the MaxPool; per decoder level the upsampling
    // (the 2x2/2 ConvTranspose as a 1x1 Conv + DepthToSpace + its bias, one kernel; a bilinear
    // Resize, a nearest Resize alone), the skip Concat read as the first Conv's prologue, then
    // the second Conv with the first's ReLU read as its prologue and its own ReLU. 21 kernels
    // with the bottom level and the 1x1 head.
    expect_layer(p, "/up.0/", {"elementwise/generic", "elementwise/generic", "elementwise/generic"});
    expect_layer(p, "/up.1/", {"single/-", "elementwise/generic", "elementwise/generic"});
    EXPECT_EQ(group_of(p, "/up.0/up/ConvTranspose").kernel.label, "Conv+Add");
    EXPECT_EQ(&group_of(p, "/up.0/up/ConvTranspose"), &group_of(p, "/up.0/up/ConvTranspose/patches"));
    EXPECT_EQ(group_of(p, "/up.1/up/Resize").kernel.label, "Resize");
    EXPECT_EQ(&group_of(p, "/up.1/Concat"), &group_of(p, "/up.1/conv/conv.0/Conv"));
    EXPECT_EQ(p.plan->groups.size(), 21u);
  } else if (c.model == "falcon") {
    // Parallel residual: one LayerNorm feeds attention and the MLP side by side, so Q, the one
    // shared K and V head (multi-query) and fc_in read the same rows and are one horizontal
    // MatMul (x4). 5 kernels per block: that MatMul (K's and V's expand over the heads as its
    // epilogue), attention whole (scale, the ALiBi bias and the torch.where causal mask),
    // dense + the first residual Add, the GELU on fc_in's columns, fc_out + the second residual
    // Add + the next block's LayerNorm (the last one's ln_f). In block 0 the GELU joins the wide
    // MatMul's group; from block 1 on that merge would raise the predicted peak above the
    // unfused one (GAF-NF003), so it is a kernel of its own there, and block 0 has its LayerNorm.
    const std::vector<std::string> block = {
        "horizontal_matmul/horizontal_matmul+generic", "matmul_epilogue/attention+generic", "matmul_epilogue/generic",
        "elementwise/elementwise_chain+generic", "matmul_epilogue/matmul_layernorm"};
    std::vector<std::string> first = {"normalization/norm_op", "horizontal_matmul/horizontal_matmul+generic",
                                      "matmul_epilogue/attention+generic", "matmul_epilogue/generic",
                                      "matmul_epilogue/matmul_layernorm"};
    expect_layer(p, "/blocks.0/", first);
    std::vector<std::string> second = block;
    second.push_back("matmul_epilogue/matmul_layernorm");  // block 0's fc_out, with this block's LayerNorm
    expect_layer(p, "/blocks.1/", second);
    EXPECT_EQ(group_of(p, "/blocks.0/attn/Where_2").rule, "attention");
    EXPECT_EQ(group_of(p, "/blocks.0/attn/Softmax").rule, "attention");
    EXPECT_EQ(p.plan->groups.size(), 10u);
  } else if (c.model == "torch_encoder") {
    // nn.TransformerEncoder, post-LN: 5 kernels per layer. in_proj (Q|K|V as one MatMul on the
    // input transposed to [seq, batch, hidden]; its rows folded across the batch axis by the
    // tile schedule) + bias; attention whole (the heads' Reshape/Transpose per Q, K, V as its
    // prologues, Q's scale); out_proj (a Gemm, as MatMul + bias) with its rows reshaped and
    // transposed back, the residual Add and norm1 (rule matmul_layernorm through the row-moving
    // layout ops); linear1 + bias + ReLU; linear2 + bias + residual + norm2. At this size layer
    // 1's Q scale runs apart (GAF-NF003, as in encoder_qscale).
    const std::vector<std::string> layer = {
        "horizontal_matmul/horizontal_matmul+generic", "matmul_epilogue/attention+generic",
        "matmul_epilogue/matmul_layernorm", "matmul_epilogue/matmul_epilogue", "matmul_epilogue/matmul_layernorm"};
    expect_layer(p, "/encoder/layers.0/", layer);
    std::vector<std::string> last = layer;
    last.push_back("elementwise/generic");
    expect_layer(p, "/encoder/layers.1/", last);
    EXPECT_EQ(&group_of(p, "/encoder/layers.0/self_attn/Transpose"), &group_of(p, "/encoder/layers.0/self_attn/MatMul"))
        << "the input's transpose to [seq, batch, hidden] read by in_proj";
    EXPECT_EQ(group_of(p, "/encoder/layers.0/self_attn/Softmax").rule, "attention");
    EXPECT_EQ(&group_of(p, "/encoder/layers.0/norm1/LayerNormalization"),
              &group_of(p, "/encoder/layers.0/self_attn/Gemm"));
    EXPECT_EQ(p.plan->groups.size(), 11u);
  } else if (c.model == "einsum_encoder") {
    // 5 kernels per layer, as for the same block written with matmul: both torch.einsum products
    // are rewritten at load into Transpose + MatMul (einsum_rewrite.h), so attention is whole
    // (the qkv Reshape/Split/Squeeze and the Transposes as its prologues, the scale, Softmax, the
    // context's Transpose back as its epilogue). qkv + bias; out + bias + residual + norm1; fc1 +
    // bias + GELU; fc2 + bias + residual + norm2.
    const std::vector<std::string> layer = {"matmul_epilogue/matmul_epilogue", "matmul_epilogue/attention+generic",
                                            "matmul_epilogue/matmul_layernorm", "matmul_epilogue/matmul_epilogue",
                                            "matmul_epilogue/matmul_layernorm"};
    expect_layer(p, "/layers.0/", layer);
    expect_layer(p, "/layers.1/", layer);
    for (const Node& n : e.graph().nodes()) EXPECT_NE(n.op_type, "Einsum") << n.name;
    EXPECT_EQ(group_of(p, "/layers.0/Einsum").rule, "attention") << "the scores' MatMul keeps the Einsum's name";
    EXPECT_EQ(&group_of(p, "/layers.0/Einsum_1"), &group_of(p, "/layers.0/Softmax"));
    EXPECT_EQ(p.plan->groups.size(), 10u);
  } else if (c.model == "encoder_qscale") {
    // 5 kernels per layer: K^T = W_k x^T read at load as (x W_k^T)^T, so Q, K and V are one
    // horizontal MatMul (the scale on Q in its epilogue, K's Transpose a layout prologue of the
    // scores); attention whole (no scale between the MatMul and Softmax, no mask), out + bias +
    // residual + LN, fc1 + bias + ReLU, fc2 + bias + residual + LN.
    const std::vector<std::string> layer = {"horizontal_matmul/horizontal_matmul+generic",
                                            "matmul_epilogue/attention+generic", "matmul_epilogue/matmul_layernorm",
                                            "matmul_epilogue/matmul_epilogue", "matmul_epilogue/matmul_layernorm"};
    expect_layer(p, "/layers.0/", layer);
    // At this size the last layer's Q scale runs apart: in the wide MatMul's group it would raise
    // the predicted peak above the unfused plan's (GAF-NF003); at base size it joins there too.
    std::vector<std::string> last = layer;
    last[0] = "horizontal_matmul/horizontal_matmul";
    last.push_back("elementwise/generic");
    expect_layer(p, "/layers.1/", last);
    EXPECT_EQ(p.plan->groups.size(), 11u);
  }
}

}  // namespace

// The model is loaded once (loading folds constants by running kernels): the fused engine keeps
// the graph as loaded for the unfused one.
TEST_P(Zoo, MatchesPyTorchFusedAndUnfusedWithItsStatedPlan) {
  const Tensor want = read_npy(dir_ + "/expected.npy");
  const TensorMap inputs{{"input", read_npy(dir_ + "/input.npy")}};
  EngineOptions fused_options = options(true);
  fused_options.keep_loaded = true;
  Engine fused(dir_ + "/model.onnx", fused_options, inputs);
  expect_plan(GetParam(), fused);
  Engine unfused(fused.take_loaded_graph(), options(false), "unfused");
  for (Engine* e : {&fused, &unfused}) {
    const char* mode = e == &fused ? "fused" : "unfused";
    TensorMap out = e->run(inputs);
    ASSERT_EQ(out.count("output"), 1u);
    const Tensor& got = out.at("output");
    ASSERT_EQ(got.shape(), want.shape()) << mode;
    const double err = relative_l2(got, want);
    EXPECT_LE(err, kMaxRelativeL2) << mode;
    std::printf("[zoo] %s opset %d %s: %zu kernels, relative L2 error %.2e\n", GetParam().model.c_str(),
                GetParam().opset, mode, e->plan().groups.size(), err);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo, ::testing::ValuesIn(all_cases()), case_name);

namespace {

// Each model compiled ahead of time as a user would: examples/aot_onnx configured out of tree
// with find_package(gaf), gaf compile at build time (its symbolic dims bound from input.npy with
// --input), the app linked with the plan runtime only.
class ZooAot : public Zoo {};

std::vector<ZooCase> opset17_cases() {
  std::vector<ZooCase> cases;
  for (const ZooCase& c : all_cases())
    if (c.opset == 17) cases.push_back(c);
  return cases;
}

}  // namespace

// Both ways: the compiled library's output equals gaf's in-process run of the same plan (the same
// kernels, compiled once into objects and once by the JIT: within 1e-6 relative) and PyTorch's
// (the zoo's tolerance).
TEST_P(ZooAot, CompiledLibraryMatchesTheInProcessRunAndPyTorch) {
  const std::string out = scratch_dir("zoo_aot/" + GetParam().model);
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out + "/aot");
  const std::string app = built_aot_onnx_app(out, dir_ + "/model.onnx", "--input;input=" + dir_ + "/input.npy");
  ASSERT_FALSE(app.empty());
  CommandResult r = run_command(app + " " + dir_ + " " + out + "/aot", out + "/log");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const TensorMap inputs{{"input", read_npy(dir_ + "/input.npy")}};
  Engine fused(dir_ + "/model.onnx", options(true), inputs);
  const Tensor in_process = fused.run(inputs).at("output");
  const Tensor compiled = read_npy(out + "/aot/output.npy");
  ASSERT_EQ(compiled.shape(), in_process.shape());
  EXPECT_LE(relative_l2(compiled, in_process), 1e-6);
  EXPECT_LE(relative_l2(compiled, read_npy(dir_ + "/expected.npy")), kMaxRelativeL2);
  std::printf("[zoo aot] %s: compiled vs in-process relative L2 %.2e\n", GetParam().model.c_str(),
              relative_l2(compiled, in_process));
}

INSTANTIATE_TEST_SUITE_P(Models, ZooAot, ::testing::ValuesIn(opset17_cases()), case_name);

// Conv computes every configuration ONNX defines; what cannot be computed is refused at load in
// one line naming the node and the attribute.
TEST(ZooConv, RefusesImpossibleConfigurationsInOneLine) {
  auto refusal = [](const std::string& attr, AttrValue value) -> std::string {
    GraphBuilder b("conv");
    ValueRef x = b.input("x", DType::Float32, {1, 3, 8, 8});
    ValueRef w = b.weight("w", random_uniform({4, 3, 4, 4}, 1));
    Attributes a;
    a.set(attr, std::move(value));
    b.output(b.op1("Conv", {x, w}, a), "y");
    try {
      prepared(b.finish());
    } catch (const GafError& e) {
      return e.what();
    }
    return "accepted";
  };
  for (const auto& [attr, value, says] : std::vector<std::tuple<std::string, AttrValue, std::string>>{
           {"group", int64_t{2}, "group=2 must divide X's 3 channels and W's 4 outputs"},
           {"kernel_shape", std::vector<int64_t>{3, 3}, "kernel_shape [3,3] differs from W's spatial shape [4,4]"},
           {"dilations", std::vector<int64_t>{3, 3},
            "the window (kernel_shape [4,4], dilations [3,3]) is larger than the padded input [8,8]"},
           {"strides", std::vector<int64_t>{0, 1}, "strides [0,1] must be positive"},
           {"auto_pad", std::string("SAME"), "unsupported attribute auto_pad=SAME"}}) {
    const std::string got = refusal(attr, value);
    EXPECT_NE(got.find("(Conv): " + says), std::string::npos) << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}
