// The prefill's LM head on the last row only (fusion/frontend/last_row.h): the rewrite applies to
// logits = MatMul(h, W) [+ bias] and then equals the last position of the full logits exactly
// (the same row computed by the same reference op); it leaves other spellings untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "fusion/frontend/last_row.h"
#include "fusion/ir/builder.h"
#include "planner_test_util.h"

using namespace gaf;
using gaf::testing::prepared;
using gaf::testing::random_uniform;

namespace {

// h = x * 2 (so A is computed), logits = h @ W (+ b); x [2, 5, 8], W [8, 12].
Graph lm_head(bool bias) {
  GraphBuilder b("lm_head");
  ValueRef x = b.input("x", DType::Float32, {2, 5, 8});
  ValueRef h = b.mul(x, b.scalar(2.0f));
  ValueRef logits = b.matmul(h, b.weight("W", random_uniform({8, 12}, 1)));
  if (bias) logits = b.add(logits, b.weight("b", random_uniform({12}, 2)));
  b.output(logits, "logits");
  return b.finish();
}

}  // namespace

TEST(LastRow, LmHeadRunsOnTheLastRowOnly) {
  for (bool bias : {false, true}) {
    Graph whole = prepared(lm_head(bias));
    Graph g = prepared(lm_head(bias));
    ASSERT_TRUE(slice_output_to_last_row(g, "logits")) << "bias " << bias;
    EXPECT_EQ(std::count_if(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op_type == "Slice"; }), 1);
    EXPECT_EQ(g.value("logits").type.shape(), (Shape{2, 1, 12}));
    TensorMap in{{"x", random_uniform({2, 5, 8}, 3)}};
    ReferenceExecutor ref;
    const Tensor all = ref.run(whole, in).at("logits"), last = ref.run(g, in).at("logits");
    for (int64_t r = 0; r < 2; ++r)
      EXPECT_EQ(std::memcmp(last.data<float>() + r * 12, all.data<float>() + (r * 5 + 4) * 12, 12 * sizeof(float)), 0)
          << "row " << r;
  }
}

TEST(LastRow, OtherSpellingsAreLeftAlone) {
  GraphBuilder b("not_a_head");
  ValueRef x = b.input("x", DType::Float32, {2, 5, 8});
  ValueRef y = b.input("y", DType::Float32, {8, 12});
  b.output(b.matmul(x, y), "logits");  // B is not a weight
  Graph g = prepared(b.finish());
  const size_t nodes = g.nodes().size();
  EXPECT_FALSE(slice_output_to_last_row(g, "logits"));
  EXPECT_FALSE(slice_output_to_last_row(g, "missing"));
  EXPECT_EQ(g.nodes().size(), nodes);
}
