// Packing MatMul weights at load (generators/weight_packing.h): which weights are packed, the
// panel layout, and that a packed graph computes what the unpacked one does.
#include <gtest/gtest.h>

#include "fusion/ir/builder.h"
#include "fusion/planner/planner.h"
#include "generators/executable.h"
#include "generators/reference_executor.h"
#include "generators/weight_packing.h"
#include "planner_test_util.h"
#include "tensor_compare.h"

using namespace gaf;

namespace {

Tensor iota(Shape s) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 97) * 0.01f;
  return t;
}

// AVX-512 defaults: 16 lanes, 3 x 8 tiles, so MatMuls with N a multiple of 48 (and > 48) pack.
HostScheduleParams avx512() { return default_host_params(16, 32); }

TEST(WeightPacking, PanelsReplaceTheWeightAndTheMatMulSaysSo) {
  GraphBuilder b("pack");
  auto x = b.input("x", DType::Float32, {1, 20, 7});
  b.output(b.matmul(x, b.weight("w", iota({7, 96}))), "y");
  Graph g = gaf::testing::prepared(b.finish());
  Tensor w = *g.value("w").constant;
  ASSERT_EQ(pack_matmul_weights(g, avx512()), 1);
  const Tensor& p = *g.value("w").constant;
  ASSERT_EQ(p.shape(), Shape({2, 7, 48}));
  EXPECT_EQ(g.value("w").type.shape(), Shape({2, 7, 48}));
  for (int64_t q = 0; q < 2; ++q)
    for (int64_t k = 0; k < 7; ++k)
      for (int64_t i = 0; i < 48; ++i)
        ASSERT_EQ(p.data<float>()[(q * 7 + k) * 48 + i], w.data<float>()[k * 96 + q * 48 + i]);
  for (const Node& n : g.nodes())
    if (n.op_type == "MatMul") EXPECT_EQ(n.attrs.get_int("_b_panel", 0), 48);
  EXPECT_EQ(pack_matmul_weights(g, avx512()), 0) << "packing twice is a no-op";
}

TEST(WeightPacking, LeavesSharedNarrowOutputAndActivationOperandsAlone) {
  GraphBuilder b("nopack");
  auto x = b.input("x", DType::Float32, {4, 8});
  auto shared = b.weight("shared", iota({8, 96}));
  b.output(b.matmul(x, shared), "y1");
  b.output(b.matmul(x, shared), "y2");                          // two readers
  b.output(b.matmul(x, b.weight("one", iota({8, 48}))), "y4");  // one panel: nothing to gain
  auto act = b.input("a", DType::Float32, {8, 96});
  b.output(b.matmul(x, act), "y5");  // not a constant
  Graph g = gaf::testing::prepared(b.finish());
  EXPECT_EQ(pack_matmul_weights(g, avx512()), 0);
}

// N not a multiple of the panel width (GPT-2's vocabulary 50257): the last panel is padded with
// zeros, `_b_cols` keeps N, and the kernel (its last tile guarded) equals the unpacked one, for
// one row (a decode step's GEMV) and for 13.
TEST(WeightPacking, PadsTheLastPanelWhenNIsNotAMultiple) {
  for (int64_t rows : {1, 13}) {
    GraphBuilder b("padded");
    auto x = b.input("x", DType::Float32, {1, rows, 40});
    b.output(b.matmul(x, b.weight("w", iota({40, 101}))), "y");
    Graph g = gaf::testing::prepared(b.finish());
    TensorMap in{{"x", iota({1, rows, 40})}};
    Graph packed = g;
    FusionPlan plan = plan_fusion_rewriting(packed, {}, RuleRegistry::builtin());
    ASSERT_EQ(pack_matmul_weights(packed, avx512()), 1);
    const Tensor& p = *packed.value("w").constant;
    ASSERT_EQ(p.shape(), Shape({3, 40, 48}));
    EXPECT_EQ(p.data<float>()[(2 * 40 + 5) * 48 + 5], 0.0f) << "column 101 is past N: zero";
    for (const Node& n : packed.nodes())
      if (n.op_type == "MatMul") EXPECT_EQ(n.attrs.get_int("_b_cols", 0), 101);
    Executable plain = build_executable(g, plan), fast = build_executable(packed, plan);
    const Tensor want = plain.runner->run(in).at("y");
    ASSERT_EQ(want.shape(), Shape({1, rows, 101}));
    EXPECT_EQ(gaf::testing::compare_tensors(fast.runner->run(in).at("y"), want, {1e-5, 1e-4}), "") << rows << " rows";
  }
}

TEST(WeightPacking, PackedGraphComputesTheSame) {
  GraphBuilder b("same");
  auto x = b.input("x", DType::Float32, {2, 13, 300});
  b.output(b.relu(b.matmul(x, b.weight("w", iota({300, 144})))), "y");
  Graph g = gaf::testing::prepared(b.finish());
  TensorMap in{{"x", iota({2, 13, 300})}};
  Graph packed = g;
  FusionPlan plan = plan_fusion_rewriting(packed, {}, RuleRegistry::builtin());
  Executable plain = build_executable(g, plan);
  ASSERT_EQ(pack_matmul_weights(packed, avx512()), 1);
  Executable fast = build_executable(packed, plan);
  const Tensor want = plain.runner->run(in).at("y");
  EXPECT_EQ(gaf::testing::compare_tensors(fast.runner->run(in).at("y"), want, {1e-5, 1e-4}), "");
  ReferenceExecutor ref;  // the op's builder reads the packed B: the reference runs it too
  EXPECT_EQ(gaf::testing::compare_tensors(ref.run(packed, in).at("y"), want, {1e-5, 1e-4}), "");
  EXPECT_EQ(g.value("w").constant->shape(), Shape({300, 144})) << "the copy's original is untouched";
}

}  // namespace
