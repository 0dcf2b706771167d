// The host schedules compute the same function as the reference: each group kind at odd sizes
// (not multiples of the register tile or the vector width, and smaller than one tile), run
// fused and unfused (every op alone, production schedules) and compared with the reference
// executor (every op its own compute_root pipeline) on random inputs.
// Tolerance: |got - ref| <= 1e-5 * |ref| + 1e-5 * sqrt(K) for MatMuls (fp32 sums of K terms in
// another order), 1e-5 relative + 1e-6 absolute otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "engine/engine.h"
#include "generators/executable.h"
#include "schedules/host_params.h"
#include "schedules/host_target.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;

namespace {

Tensor random(Shape s, uint32_t seed, float scale = 1.0f) {
  return gaf::testing::random_uniform(std::move(s), seed, scale);
}

// Runs `g` through the reference, the fused plan and the unfused plan; expects every output
// equal within `tol`, and at least `min_fused_groups` groups of more than one node.
void expect_schedules_match(Graph g, const TensorMap& inputs, gaf::testing::Tolerance tol,
                            size_t min_fused_groups = 0) {
  g = gaf::testing::prepared(std::move(g));
  ReferenceExecutor ref;
  TensorMap want = ref.run(g, inputs);
  EngineOptions off;  // both with weights packed, as gaf run runs them
  off.fusion.enabled = false;
  Engine fused(Graph(g), EngineOptions{}), unfused(std::move(g), off);
  size_t multi = 0;
  for (const FusionGroup& grp : fused.plan().groups) multi += grp.nodes.size() > 1;
  EXPECT_GE(multi, min_fused_groups) << "the case should exercise a fused group";
  TensorMap got_fused = fused.run(inputs), got_unfused = unfused.run(inputs);
  for (const auto& [name, t] : want) {
    EXPECT_EQ(gaf::testing::compare_tensors(got_fused.at(name), t, tol), "") << "fused, output " << name;
    EXPECT_EQ(gaf::testing::compare_tensors(got_unfused.at(name), t, tol), "") << "unfused, output " << name;
  }
}

gaf::testing::Tolerance matmul_tol(int64_t K) { return {1e-5, 1e-5 * std::sqrt(static_cast<double>(K))}; }

// x[B, M, K] @ W[K, N] + b, then GELU (erf, decomposed as PyTorch exports it) + residual r.
struct MatMulCase {
  int64_t B, M, K, N;
};

class MatMulEpilogue : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulEpilogue, BiasGeluResidualMatchReference) {
  MatMulCase c = GetParam();
  GraphBuilder b("mm");
  auto x = b.input("x", DType::Float32, {c.B, c.M, c.K});
  auto r = b.input("r", DType::Float32, {c.B, c.M, c.N});
  auto y = b.add(b.matmul(x, b.weight("w", random({c.K, c.N}, 1))), b.weight("b", random({c.N}, 2)));
  auto g = b.mul(b.mul(y, b.add(b.erf(b.div(y, b.scalar(1.4142135f))), b.scalar(1.0f))), b.scalar(0.5f));
  b.output(b.add(g, r), "out");
  b.output(y, "pre");  // a second reader of the MatMul: its tiles then stay at root
  expect_schedules_match(b.finish(), {{"x", random({c.B, c.M, c.K}, 3)}, {"r", random({c.B, c.M, c.N}, 4)}},
                         matmul_tol(c.K), 1);
}

TEST_P(MatMulEpilogue, SingleOutputEpilogueMatchesReference) {
  MatMulCase c = GetParam();
  GraphBuilder b("mm1");
  auto x = b.input("x", DType::Float32, {c.B, c.M, c.K});
  auto y = b.add(b.matmul(x, b.weight("w", random({c.K, c.N}, 5))), b.weight("b", random({c.N}, 6)));
  b.output(b.relu(y), "out");
  expect_schedules_match(b.finish(), {{"x", random({c.B, c.M, c.K}, 7)}}, matmul_tol(c.K), 1);
}

// Sizes around the AVX-512 tile (3 vectors of 16 x 8 rows): smaller than a tile, not a multiple
// of it, a single row or column, a divisor-friendly BERT-like shape, K long enough for k blocks,
// and N of several panels (weights packed, as gaf run packs them).
INSTANTIATE_TEST_SUITE_P(OddSizes, MatMulEpilogue,
                         ::testing::Values(MatMulCase{1, 1, 1, 1}, MatMulCase{1, 3, 7, 5}, MatMulCase{1, 13, 33, 17},
                                           MatMulCase{2, 9, 50, 47}, MatMulCase{1, 37, 19, 100},
                                           MatMulCase{3, 5, 64, 49}, MatMulCase{1, 20, 96, 96},
                                           // K of 4+ blocks of 256: the k-blocked accumulator,
                                           // K not a multiple of the block, M not of the tile
                                           MatMulCase{1, 13, 1100, 50}, MatMulCase{2, 19, 1024, 96},
                                           // N of several 48-column panels: B packed at load
                                           MatMulCase{3, 5, 40, 144},
                                           // rows of one or two per batch entry, folded into one
                                           // row loop (nn.MultiheadAttention's [seq, 1, hidden]
                                           // projections): 37 rows, not a whole number of tiles;
                                           // with the k-blocked accumulator
                                           MatMulCase{37, 1, 33, 100}, MatMulCase{6, 2, 1100, 50}),
                         [](const auto& info) {
                           const MatMulCase& c = info.param;
                           return "B" + std::to_string(c.B) + "M" + std::to_string(c.M) + "K" + std::to_string(c.K) +
                                  "N" + std::to_string(c.N);
                         });

TEST(BatchedMatMul, AttentionScoresScaleMaskAtOddSizes) {
  // Q[1, H, S, D] @ K^T[1, H, D, S] / sqrt(D) + mask, as BERT's attention, with S and D odd.
  for (int64_t S : {3, 19, 45})
    for (int64_t D : {5, 24}) {
      GraphBuilder b("att");
      auto q = b.input("q", DType::Float32, {1, 3, S, D});
      auto k = b.input("k", DType::Float32, {1, 3, D, S});
      auto m = b.input("m", DType::Float32, {1, 1, 1, S});
      b.output(b.add(b.div(b.matmul(q, k), b.scalar(std::sqrt(static_cast<float>(D)))), m), "scores");
      expect_schedules_match(
          b.finish(), {{"q", random({1, 3, S, D}, 8)}, {"k", random({1, 3, D, S}, 9)}, {"m", random({1, 1, 1, S}, 10)}},
          matmul_tol(D), 1);
    }
}

// Q[1, H, S, D] x K^T / sqrt(D) + mask[1, 1, 1, N], then Softmax over the N keys: one
// attention_scores group. K is an input [1, H, D, N], or with `k_transposed` [1, H, N, D]
// transposed in the group (K^T then staged per row block). Inputs seeded seed, seed + 1, seed + 2.
struct ScoresCase {
  int64_t H, S, N, D;
};

void expect_scores_softmax_match(ScoresCase c, bool k_transposed, uint32_t seed) {
  GraphBuilder b(k_transposed ? "att_sm_kt" : "att_sm");
  const Shape k_shape = k_transposed ? Shape{1, c.H, c.N, c.D} : Shape{1, c.H, c.D, c.N};
  auto q = b.input("q", DType::Float32, {1, c.H, c.S, c.D});
  auto k = b.input("k", DType::Float32, std::vector<Dim>(k_shape.begin(), k_shape.end()));
  auto m = b.input("m", DType::Float32, {1, 1, 1, c.N});
  auto kt = k_transposed ? b.transpose(k, {0, 1, 3, 2}) : k;
  auto scores = b.add(b.div(b.matmul(q, kt), b.scalar(std::sqrt(static_cast<float>(c.D)))), m);
  b.output(b.softmax(scores, -1), "probs");
  expect_schedules_match(b.finish(),
                         {{"q", random({1, c.H, c.S, c.D}, seed)},
                          {"k", random(k_shape, seed + 1)},
                          {"m", random({1, 1, 1, c.N}, seed + 2)}},
                         matmul_tol(c.D), 1);
}

TEST(BatchedMatMul, AttentionScoresWithSoftmaxAtOddSizes) {
  // The attention_scores group: scores in register tiles inside Softmax's row blocks. Row blocks
  // that do not divide S (S = 200, 130 columns: blocks of 120 rows), S below one tile, D odd.
  for (ScoresCase c :
       {ScoresCase{3, 19, 19, 5}, ScoresCase{2, 3, 3, 24}, ScoresCase{1, 200, 130, 8}, ScoresCase{2, 45, 45, 16}})
    expect_scores_softmax_match(c, false, 14);
}

TEST(BatchedMatMul, AttentionScoresWithSoftmaxAndStagedKeysAtOddSizes) {
  // As above with K [1, H, N, D] transposed in the group: where K^T is staged per row block, the
  // blocks are whole heads (H >= 8) or about M / (8 / H) rows in whole tiles (M = 200 at 3
  // heads: 2 blocks per head, the second one short).
  for (ScoresCase c : {ScoresCase{1, 45, 45, 16}, ScoresCase{3, 200, 130, 8}, ScoresCase{8, 19, 21, 5}})
    expect_scores_softmax_match(c, true, 17);
}

TEST(LayoutChains, AttentionThroughWideQkvAtOddSizes) {
  // BERT's self-attention at odd sizes, one `attention` group: the horizontal rewrite's wide
  // Q|K|V output read through Slice/Reshape/Transpose prologues (K^T staged per head, Q per
  // block), scores and Softmax per head block, probs x V stored through Transpose + Reshape back
  // to [S, H * D] (D = 24 is no tile width's multiple: that case takes the generic schedule).
  // S below one tile.
  // At S 20, D 5 the scores outweigh Q|K|V and keeping the wide output live through attention
  // would raise the predicted peak memory (GAF-NF003): the prologues are refused.
  struct Case {
    int64_t S, H, D;
    bool prologues;
  };
  // S 400: a head's probabilities (625 KB) exceed MatMulParams::a_block_bytes, so each head runs
  // in row blocks (324 rows, then 76).
  for (Case c : {Case{19, 3, 16, true}, Case{45, 2, 64, true}, Case{3, 2, 24, true}, Case{20, 3, 5, false},
                 Case{400, 2, 64, true}}) {
    SCOPED_TRACE("S" + std::to_string(c.S) + " H" + std::to_string(c.H) + " D" + std::to_string(c.D));
    const int64_t hd = c.H * c.D;
    GraphBuilder b("attn");
    auto x = b.input("x", DType::Float32, {1, c.S, hd});
    auto m = b.input("m", DType::Float32, {1, 1, 1, c.S});
    auto heads = [&](const char* w, uint32_t seed, std::vector<int64_t> perm) {
      auto p = b.add(b.matmul(x, b.weight(std::string(w) + "_w", random({hd, hd}, seed))),
                     b.weight(std::string(w) + "_b", random({hd}, seed + 1)));
      return b.transpose(b.reshape(p, {0, 0, c.H, c.D}), perm);
    };
    auto q = heads("q", 40, {0, 2, 1, 3}), kt = heads("k", 42, {0, 2, 3, 1}), v = heads("v", 44, {0, 2, 1, 3});
    auto scores = b.add(b.div(b.matmul(q, kt), b.scalar(std::sqrt(static_cast<float>(c.D)))), m);
    auto ctx = b.matmul(b.softmax(scores, -1), v);
    b.output(b.reshape(b.transpose(ctx, {0, 2, 1, 3}), {0, 0, hd}), "ctx");
    Graph g = gaf::testing::prepared(b.finish());
    Graph planned = g;
    FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
    int with_slices = 0;
    for (const FusionGroup& grp : plan.groups)
      for (int n : grp.nodes)
        if (planned.nodes()[n].op_type == "Slice") {
          ++with_slices;
          break;
        }
    std::string refusals;
    for (const RefusedMerge& r : plan.refused) refusals += "\n" + r.message;
    if (c.prologues) EXPECT_EQ(with_slices, 1) << "Q, K^T and V into the attention group" << refusals;
    expect_schedules_match(std::move(g), {{"x", random({1, c.S, hd}, 46)}, {"m", random({1, 1, 1, c.S}, 47)}},
                           matmul_tol(hd), 2);
  }
}

TEST(BatchedMatMul, AttentionWholeAtOddSizes) {
  // The attention rule on graph inputs (no layout ops): Q K^T, scale, mask, Softmax, probs x V
  // in one group, computed per head; S and D odd, S below one tile, D below one vector, S == D
  // (the scores' and the output's trailing dims alike), D wider than one tile (128: two column
  // tiles per head inside the head's block), and heads in row blocks (S 650: a head's
  // probabilities exceed MatMulParams::a_block_bytes; blocks of 200 rows, the last 50).
  struct Case {
    int64_t H, S, D;
  };
  for (Case c : {Case{3, 19, 5}, Case{2, 3, 24}, Case{2, 45, 16}, Case{1, 130, 64}, Case{2, 16, 16}, Case{2, 20, 128},
                 Case{2, 650, 16}}) {
    SCOPED_TRACE("H" + std::to_string(c.H) + " S" + std::to_string(c.S) + " D" + std::to_string(c.D));
    GraphBuilder b("attn_whole");
    auto q = b.input("q", DType::Float32, {1, c.H, c.S, c.D});
    auto kt = b.input("k", DType::Float32, {1, c.H, c.D, c.S});
    auto v = b.input("v", DType::Float32, {1, c.H, c.S, c.D});
    auto m = b.input("m", DType::Float32, {1, 1, 1, c.S});
    auto scores = b.add(b.div(b.matmul(q, kt), b.scalar(std::sqrt(static_cast<float>(c.D)))), m);
    b.output(b.matmul(b.softmax(scores, -1), v), "ctx");
    Graph g = gaf::testing::prepared(b.finish());
    Graph planned = g;
    FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
    ASSERT_EQ(plan.groups.size(), 1u);
    EXPECT_EQ(plan.groups[0].rule, "attention");
    expect_schedules_match(std::move(g),
                           {{"q", random({1, c.H, c.S, c.D}, 50)},
                            {"k", random({1, c.H, c.D, c.S}, 51)},
                            {"v", random({1, c.H, c.S, c.D}, 52)},
                            {"m", random({1, 1, 1, c.S}, 53)}},
                           matmul_tol(std::max(c.D, c.S)), 1);
  }
}

// x[B, M, K] @ W + bias + residual, then LayerNorm over the last axis — decomposed as PyTorch
// exports it, or the LayerNormalization op — as one matmul_layernorm group. With `w_is_input`,
// W is an activation (not a weight): the MatMul is tiled inside LayerNorm's row blocks. With
// `pre_norm`, the residual sum is a second graph output, as a pre-norm block's next residual
// reads it: the MatMul's tiles store it and the norm's rows read it back.
Graph matmul_layernorm_graph(const MatMulCase& c, bool decomposed, bool w_is_input, bool pre_norm = false) {
  GraphBuilder b("mm_ln");
  auto x = b.input("x", DType::Float32, {c.B, c.M, c.K});
  auto w = w_is_input ? b.input("w", DType::Float32, {c.K, c.N}) : b.weight("w", random({c.K, c.N}, 21));
  auto h =
      b.add(b.add(b.matmul(x, w), b.weight("bias", random({c.N}, 22))), b.input("r", DType::Float32, {c.B, c.M, c.N}));
  auto gamma = b.weight("gamma", random({c.N}, 23)), beta = b.weight("beta", random({c.N}, 24));
  ValueRef y;
  if (decomposed) {
    auto d = b.sub(h, b.reduce_mean(h, {-1}));
    auto var = b.reduce_mean(b.pow(d, b.scalar(2.0f)), {-1});
    y = b.add(b.mul(b.div(d, b.sqrt(b.add(var, b.scalar(1e-5f)))), gamma), beta);
  } else {
    Attributes at;
    at.set("axis", int64_t{-1});
    at.set("epsilon", 1e-5f);
    y = b.op1("LayerNormalization", {h, gamma, beta}, at);
  }
  b.output(y, "out");
  if (pre_norm) b.output(h, "sum");
  return b.finish();
}

TEST(MatMulLayerNorm, ProjectionResidualLayerNormAtOddSizes) {
  for (MatMulCase c :
       {MatMulCase{1, 13, 33, 17}, MatMulCase{2, 9, 50, 47}, MatMulCase{1, 20, 96, 96}, MatMulCase{3, 5, 40, 144}})
    for (bool decomposed : {true, false})
      for (bool w_is_input : {false, true}) {
        SCOPED_TRACE("M" + std::to_string(c.M) + " K" + std::to_string(c.K) + " N" + std::to_string(c.N) +
                     (decomposed ? " decomposed" : " LayerNormalization") + (w_is_input ? " W input" : " W weight"));
        Graph g = gaf::testing::prepared(matmul_layernorm_graph(c, decomposed, w_is_input));
        Graph planned = g;
        FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
        ASSERT_EQ(plan.groups.size(), 1u);
        EXPECT_EQ(plan.groups[0].rule, "matmul_layernorm");
        TensorMap in{{"x", random({c.B, c.M, c.K}, 25)}, {"r", random({c.B, c.M, c.N}, 26)}};
        if (w_is_input) in.emplace("w", random({c.K, c.N}, 27));
        expect_schedules_match(std::move(g), in, matmul_tol(c.K), 1);
      }
}

// nn.MultiheadAttention's out_proj: a Gemm on [seq * batch, hidden] rows, its bias, the rows
// reshaped to [seq, batch, hidden] and transposed to [batch, seq, hidden], the residual Add and
// LayerNorm — one matmul_layernorm kernel whose norm reads the product's rows permuted.
TEST(MatMulLayerNorm, RowsReshapedAndTransposedBeforeTheResidualAtOddSizes) {
  struct Case {
    int64_t seq, batch, K, N;
  };
  for (Case c : {Case{13, 1, 33, 17}, Case{9, 3, 50, 47}, Case{5, 4, 40, 144}}) {
    SCOPED_TRACE("seq " + std::to_string(c.seq) + " batch " + std::to_string(c.batch));
    GraphBuilder b("mha_out");
    auto x = b.input("x", DType::Float32, {c.seq * c.batch, c.K});
    auto r = b.input("r", DType::Float32, {c.batch, c.seq, c.N});
    auto y = b.add(b.matmul(x, b.weight("w", random({c.K, c.N}, 81))), b.weight("bias", random({c.N}, 82)));
    auto rows = b.transpose(b.reshape(y, {c.seq, c.batch, c.N}), {1, 0, 2});
    Attributes at;
    at.set("axis", int64_t{-1});
    at.set("epsilon", 1e-5f);
    b.output(b.op1("LayerNormalization",
                   {b.add(rows, r), b.weight("gamma", random({c.N}, 83)), b.weight("beta", random({c.N}, 84))}, at),
             "out");
    Graph g = gaf::testing::prepared(b.finish());
    Graph planned = g;
    FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
    ASSERT_EQ(plan.groups.size(), 1u);
    EXPECT_EQ(plan.groups[0].rule, "matmul_layernorm");
    expect_schedules_match(std::move(g), {{"x", random({c.seq * c.batch, c.K}, 85)}, {"r", random({c.batch, c.seq, c.N}, 86)}},
                           matmul_tol(c.K), 1);
  }
}

// The pre-norm block's form: the residual sum leaves the group beside the normalised rows. The
// tiles store the sum, the norm's statistics are computed per row of its output (a decomposed
// norm's reductions compute_at that output, named by FuncDecision::at_output).
TEST(MatMulLayerNorm, PreNormResidualSumAsSecondOutputAtOddSizes) {
  for (MatMulCase c : {MatMulCase{1, 13, 33, 17}, MatMulCase{2, 9, 50, 47}, MatMulCase{1, 20, 96, 96}})
    for (bool decomposed : {true, false}) {
      SCOPED_TRACE("M" + std::to_string(c.M) + " K" + std::to_string(c.K) + " N" + std::to_string(c.N) +
                   (decomposed ? " decomposed" : " LayerNormalization"));
      Graph g = gaf::testing::prepared(matmul_layernorm_graph(c, decomposed, false, true));
      Graph planned = g;
      FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
      std::string why;
      for (const FusionGroup& x : plan.groups) why += " " + x.rule + "(" + std::to_string(x.nodes.size()) + ")";
      for (const RefusedMerge& r : plan.refused) why += "\n" + r.message;
      ASSERT_EQ(plan.groups.size(), 1u) << why;
      const FusionGroup& grp = plan.groups[0];
      EXPECT_EQ(grp.rule, "matmul_layernorm");
      ASSERT_EQ(grp.outputs.size(), 2u);
      const int norm_out = grp.outputs[0] == planned.outputs()[0] ? 0 : 1;
      for (const FuncDecision& d : grp.decisions)
        if (planned.nodes()[planned.value(d.value).producer].op_type == "ReduceMean") {
          EXPECT_EQ(d.decision, ComputeDecision::ComputeAt) << d.value << ": " << d.reason;
          EXPECT_EQ(d.at_output, norm_out) << d.value;
        }
      TensorMap in{{"x", random({c.B, c.M, c.K}, 25)}, {"r", random({c.B, c.M, c.N}, 26)}};
      expect_schedules_match(std::move(g), in, matmul_tol(c.K), 1);
    }
}

// x[B, M, K]: act(x W_gate) * (x W_up), the gated MLP's first half, as one gated_mlp group whose
// tiles compute both projections (schedule_gated_tiles).
TEST(GatedMlp, BothProjectionsPerTileForEveryActivationAtOddSizes) {
  enum class Act { SiLU, QuickGelu, Relu, Tanh, GeluErf };
  for (MatMulCase c :
       {MatMulCase{1, 13, 33, 17}, MatMulCase{2, 9, 50, 96}, MatMulCase{1, 1, 64, 200}, MatMulCase{1, 32, 96, 256}})
    for (Act act : {Act::SiLU, Act::QuickGelu, Act::Relu, Act::Tanh, Act::GeluErf}) {
      SCOPED_TRACE("M" + std::to_string(c.M) + " K" + std::to_string(c.K) + " N" + std::to_string(c.N) + " act " +
                   std::to_string(static_cast<int>(act)));
      GraphBuilder b("gated");
      auto x = b.input("x", DType::Float32, {c.B, c.M, c.K});
      auto gate = b.matmul(x, b.weight("w_gate", random({c.K, c.N}, 61, 0.2f)));
      auto up = b.matmul(x, b.weight("w_up", random({c.K, c.N}, 62, 0.2f)));
      ValueRef a;
      switch (act) {
        case Act::SiLU: a = b.mul(gate, b.op1("Sigmoid", {gate})); break;
        case Act::QuickGelu: a = b.mul(gate, b.op1("Sigmoid", {b.mul(gate, b.scalar(1.702f))})); break;
        case Act::Relu: a = b.relu(gate); break;
        case Act::Tanh: a = b.tanh(gate); break;
        case Act::GeluErf:
          a = b.mul(b.mul(gate, b.add(b.erf(b.div(gate, b.scalar(1.41421356f))), b.scalar(1.0f))), b.scalar(0.5f));
          break;
      }
      b.output(b.mul(a, up), "out");
      Graph g = gaf::testing::prepared(b.finish());
      Graph planned = g;
      FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
      ASSERT_EQ(plan.groups.size(), 1u);
      EXPECT_EQ(plan.groups[0].rule, "gated_mlp");
      EXPECT_EQ(plan.groups[0].kernel.label, "GatedMLP");
      EXPECT_GE(plan.groups[0].role_node(MemberRole::Up), 0);
      expect_schedules_match(std::move(g), {{"x", random({c.B, c.M, c.K}, 63)}}, matmul_tol(c.K), 1);
    }
}

// A Conv with layout ops after it in its group (ViT's patch embedding: Conv, flatten, transpose
// to tokens): the Conv is computed at root inside the group, in its own direct-conv tiles.
TEST(ConvTiles, PatchEmbeddingWithLayoutEpilogueAtOddSizes) {
  struct Case {
    int64_t C, O, H, W, patch;
  };
  for (Case c : {Case{3, 24, 20, 28, 4}, Case{3, 40, 35, 21, 7}, Case{5, 16, 16, 16, 16}}) {
    SCOPED_TRACE("C" + std::to_string(c.C) + " O" + std::to_string(c.O) + " " + std::to_string(c.H) + "x" +
                 std::to_string(c.W) + " patch " + std::to_string(c.patch));
    GraphBuilder b("patches");
    auto x = b.input("x", DType::Float32, {1, c.C, c.H, c.W});
    Attributes at;
    at.set("kernel_shape", std::vector<int64_t>{c.patch, c.patch});
    at.set("strides", std::vector<int64_t>{c.patch, c.patch});
    auto y =
        b.op1("Conv",
              {x, b.weight("w", random({c.O, c.C, c.patch, c.patch}, 71, 0.3f)), b.weight("b", random({c.O}, 72))}, at);
    b.output(b.transpose(b.reshape(y, {0, 0, -1}), {0, 2, 1}), "tokens");
    Graph g = gaf::testing::prepared(b.finish());
    Graph planned = g;
    FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
    ASSERT_EQ(plan.groups.size(), 1u);
    expect_schedules_match(std::move(g), {{"x", random({1, c.C, c.H, c.W}, 73)}}, matmul_tol(c.C * c.patch * c.patch),
                           1);
  }
}

// Convs of every shape class, each with a bias, a residual Add and a Relu in its group: stride 1
// (any kernel, pads, dilation, groups, depthwise) and 1x1 at any stride take the flat form (rows
// laid end to end at a pitch, GEMM tiles over them); a strided kxk the 2-D direct tiles. 1x1
// without padding, outputs of 64 pixels or more, are exact (X in place at stride 1, tiles
// shifted inwards at each block's end): exactly 64 pixels, odd sizes, blocks of rows, batch 2,
// channels no tile divides, stride 2.
TEST(ConvTiles, FlatAndDirectFormsWithEpilogueAtOddSizes) {
  struct Case {
    int64_t N, C, O, H, W, k, stride, pad, dilation, group;
  };
  for (Case c : {Case{1, 5, 24, 9, 13, 3, 1, 1, 1, 1}, Case{2, 16, 8, 7, 7, 3, 1, 1, 1, 1},
                 Case{1, 6, 10, 11, 5, 5, 1, 4, 2, 1}, Case{1, 12, 12, 14, 14, 3, 1, 1, 1, 12},
                 Case{1, 8, 16, 6, 10, 3, 1, 0, 1, 2}, Case{1, 32, 40, 9, 11, 1, 2, 0, 1, 1},
                 Case{2, 24, 17, 20, 3, 1, 1, 0, 1, 1}, Case{1, 7, 16, 15, 17, 3, 2, 1, 1, 1},
                 Case{1, 8, 16, 8, 8, 1, 1, 0, 1, 1}, Case{1, 20, 24, 9, 13, 1, 1, 0, 1, 1},
                 Case{2, 16, 40, 11, 7, 1, 1, 0, 1, 1}, Case{1, 48, 72, 30, 31, 1, 1, 0, 1, 1},
                 Case{1, 12, 24, 19, 21, 1, 2, 0, 1, 1}, Case{1, 9, 13, 17, 23, 1, 1, 0, 1, 1}}) {
    SCOPED_TRACE("N" + std::to_string(c.N) + " C" + std::to_string(c.C) + " O" + std::to_string(c.O) + " " +
                 std::to_string(c.H) + "x" + std::to_string(c.W) + " k" + std::to_string(c.k) + " s" +
                 std::to_string(c.stride) + " pad" + std::to_string(c.pad) + " dil" + std::to_string(c.dilation) +
                 " group" + std::to_string(c.group));
    GraphBuilder b("conv");
    auto x = b.input("x", DType::Float32, {c.N, c.C, c.H, c.W});
    Attributes at;
    at.set("strides", std::vector<int64_t>{c.stride, c.stride});
    at.set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
    at.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    at.set("group", c.group);
    auto w = b.weight("w", random({c.O, c.C / c.group, c.k, c.k}, 81, 0.3f));
    auto y = b.op1("Conv", {x, w, b.weight("b", random({c.O}, 82))}, at);
    const int64_t ho = (c.H + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    const int64_t wo = (c.W + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    auto r = b.input("r", DType::Float32, {c.N, c.O, ho, wo});
    b.output(b.relu(b.add(y, r)), "out");
    Graph g = gaf::testing::prepared(b.finish());
    Graph planned = g;
    FusionPlan plan = plan_fusion_rewriting(planned, {}, RuleRegistry::builtin());
    ASSERT_EQ(plan.groups.size(), 1u);
    expect_schedules_match(std::move(g),
                           {{"x", random({c.N, c.C, c.H, c.W}, 83)}, {"r", random({c.N, c.O, ho, wo}, 84)}},
                           matmul_tol(c.C / c.group * c.k * c.k), 1);
  }
}

TEST(TransposeTiles, InnermostAxisMovedAtOddSizes) {
  // Transposes that move the innermost axis run in 16 x 16 tiles (schedule_transpose): sizes
  // that are not multiples of the tile, smaller than it, and BERT's K^T after its projection.
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  for (const Case& c : {Case{{2, 19, 37}, {0, 2, 1}}, Case{{3, 33, 17, 5}, {0, 2, 3, 1}}, Case{{40, 21}, {1, 0}},
                        Case{{7, 5}, {1, 0}}, Case{{1, 20, 4, 18}, {0, 2, 3, 1}}}) {
    GraphBuilder b("tr");
    auto x = b.input("x", DType::Float32, std::vector<Dim>(c.in.begin(), c.in.end()));
    b.output(b.transpose(b.add(x, b.scalar(1.0f)), c.perm), "out");
    expect_schedules_match(b.finish(), {{"x", random(c.in, 31)}}, {1e-6, 0}, 1);
  }
  // In a group after a MatMul (the QKV group's K^T): the projection, then heads, then K^T.
  GraphBuilder b("kt");
  auto x = b.input("x", DType::Float32, {1, 21, 48});
  auto k = b.add(b.matmul(x, b.weight("w", random({48, 48}, 32))), b.weight("bias", random({48}, 33)));
  b.output(b.transpose(b.reshape(k, {0, 0, 3, 16}), {0, 2, 3, 1}), "kt");
  expect_schedules_match(b.finish(), {{"x", random({1, 21, 48}, 34)}}, matmul_tol(48), 1);
}

TEST(GemmTiles, TransposedOperandsAndBroadcastC) {
  GraphBuilder b("gemm");
  auto a = b.input("a", DType::Float32, {21, 11});
  Attributes at;
  at.set("transA", int64_t{1});
  at.set("transB", int64_t{1});
  at.set("alpha", 0.5f);
  auto y = b.op1("Gemm", {a, b.weight("bw", random({35, 21}, 11)), b.weight("c", random({35}, 12))}, at);
  b.output(b.relu(y), "out");
  expect_schedules_match(b.finish(), {{"a", random({21, 11}, 13)}}, matmul_tol(21), 1);
}

TEST(RowSchedules, LayerNormSoftmaxAndChainsAtOddSizes) {
  for (Shape s : {Shape{1, 1, 1}, Shape{2, 7, 5}, Shape{3, 17, 33}, Shape{1, 130, 64}, Shape{4, 9, 48}}) {
    GraphBuilder b("rows");
    auto x = b.input("x", DType::Float32, {s[0], s[1], s[2]});
    auto mean = b.reduce_mean(x, {-1});
    auto d = b.sub(x, mean);
    auto var = b.reduce_mean(b.pow(d, b.scalar(2.0f)), {-1});
    auto ln = b.div(d, b.sqrt(b.add(var, b.scalar(1e-5f))));
    b.output(b.add(b.mul(ln, b.weight("g", random({s[2]}, 14))), b.weight("be", random({s[2]}, 15))), "ln");
    b.output(b.softmax(b.mul(x, b.scalar(3.0f))), "sm");
    b.output(b.tanh(b.add(b.mul(x, x), b.scalar(0.5f))), "chain");
    expect_schedules_match(b.finish(), {{"x", random(s, 16, 2.0f)}}, {1e-5, 1e-6}, 2);
  }
}

TEST(RowSchedules, StatisticsAlongTheVectorAxisAtOddSizes) {
  // Softmax/LogSoftmax over a leading axis: the statistics vary along the vectorised axis, so the
  // last (partial) vector reads them as vectors. With a GuardWithIf tail, Halide 14 dropped that
  // vector's store once the value compared them (exp_f32's NaN test): its columns were garbage.
  for (Shape s : {Shape{3, 4, 5}, Shape{2, 3, 37}}) {
    for (int64_t axis : {0, 1}) {
      GraphBuilder b("stats");
      auto x = b.input("x", DType::Float32, {s[0], s[1], s[2]});
      Attributes a;
      a.set("axis", axis);
      b.output(b.softmax(x, axis), "sm");
      b.output(b.op1("LogSoftmax", {x}, a), "lsm");
      expect_schedules_match(b.finish(), {{"x", random(s, 18, 2.0f)}}, {1e-5, 1e-6});
    }
  }
}

TEST(RowSchedules, LegacySoftmaxOverSeveralAxesAtOddSizes) {
  // Before opset 13 Softmax/LogSoftmax normalise over every axis from `axis` on: statistics over
  // several axes, at root, and the exponentials they read not in the output's rows (computed
  // there, the kernel did not compile). Alone and with an elementwise op after them.
  for (Shape s : {Shape{2, 3, 40}, Shape{3, 5, 7}}) {
    GraphBuilder b("legacy");
    auto x = b.input("x", DType::Float32, {s[0], s[1], s[2]});
    Attributes a;
    a.set("axis", int64_t{1});
    a.set("_opset", int64_t{11});
    b.output(b.op1("Softmax", {x}, a), "sm");
    b.output(b.relu(b.op1("Softmax", {x}, a)), "sm_relu");
    b.output(b.op1("LogSoftmax", {x}, a), "lsm");
    b.output(b.relu(b.op1("LogSoftmax", {x}, a)), "lsm_relu");
    expect_schedules_match(b.finish(), {{"x", random(s, 20, 2.0f)}}, {1e-5, 1e-6}, 2);
  }
}

TEST(RowSchedules, LongFlatElementwiseSplitsIntoTasks) {
  // One axis of 100003 elements: split into parallel chunks with a ragged last one.
  GraphBuilder b("flat");
  auto x = b.input("x", DType::Float32, {100003});
  b.output(b.relu(b.sub(b.mul(x, b.scalar(2.0f)), b.scalar(0.25f))), "y");
  expect_schedules_match(b.finish(), {{"x", random({100003}, 17)}}, {1e-6, 0}, 1);
}

TEST(HostParams, DefaultsFitTheRegisterFile) {
  HostScheduleParams avx512 = default_host_params(16, 32), avx2 = default_host_params(8, 16);
  EXPECT_LE(avx512.matmul.vectors * avx512.matmul.rows + avx512.matmul.vectors + 1, 32);
  EXPECT_LE(avx2.matmul.vectors * avx2.matmul.rows + avx2.matmul.vectors + 1, 16);
  EXPECT_EQ(avx512.lanes, 16);
  EXPECT_EQ(avx2.lanes, 8);
}

}  // namespace
