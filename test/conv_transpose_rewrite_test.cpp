// The load-time rewrite of a ConvTranspose whose kernel equals its stride (patches that tile the
// output) into a 1x1 Conv to O*k*k channels + DepthToSpace (CRD) + the bias per channel
// (fusion/frontend/conv_transpose_rewrite.h): which ConvTransposes it takes, and the fused and
// unfused engines on the rewritten graph against the op itself (the reference executor's
// ConvTranspose, which the ONNX conformance cases check), |got - want| <= 1e-5 * max(1, |want|).
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "fusion/ir/builder.h"
#include "test/op_test_util.h"
#include "test/planner_test_util.h"
#include "test/tensor_compare.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

struct Case {
  std::string what;
  int64_t N, C, O, H, W, k, stride, pad, group;
  bool bias, rewritten;
};

}  // namespace

TEST(ConvTransposeRewrite, PatchesTilingTheOutputRunAsConvAndDepthToSpace) {
  const std::vector<Case> cases = {
      {"2x2/2 with bias, batch 2, odd sizes", 2, 5, 3, 9, 11, 2, 2, 0, 1, true, true},
      {"3x3/3 without bias", 1, 4, 6, 8, 8, 3, 3, 0, 1, false, true},
      {"2x2/2 on a small image (the Conv's tiles of another form)", 1, 3, 2, 3, 5, 2, 2, 0, 1, true, true},
      {"3x3/2: overlapping patches", 1, 4, 3, 6, 7, 3, 2, 0, 1, true, false},
      {"2x2/2 with padding", 1, 4, 3, 6, 7, 2, 2, 1, 1, true, false},
      {"2x2/2 in 2 groups", 1, 4, 4, 6, 7, 2, 2, 0, 2, true, false},
  };
  uint32_t seed = 5;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{c.k, c.k});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    a.set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
    a.set("group", c.group);
    const Tensor x = random_uniform({c.N, c.C, c.H, c.W}, seed++, 1.0f);
    const Tensor w = random_uniform({c.C, c.O / c.group, c.k, c.k}, seed++, 0.5f);
    const Tensor bias = random_uniform({c.O}, seed++, 0.5f);
    std::vector<Tensor> op_in{x, w};
    if (c.bias) op_in.push_back(bias);
    const Tensor want = run_op("ConvTranspose", op_in, a)[0];

    GraphBuilder b("convtranspose");
    std::vector<ValueRef> in{b.input("x", DType::Float32, {c.N, c.C, c.H, c.W}), b.weight("w", w)};
    if (c.bias) in.push_back(b.weight("b", bias));
    b.output(b.op1("ConvTranspose", in, a), "y");
    Engine fused(prepared(b.finish()), EngineOptions{});
    int transposes = 0, convs = 0, d2s = 0;
    for (const Node& n : fused.graph().nodes())
      transposes += n.op_type == "ConvTranspose", convs += n.op_type == "Conv", d2s += n.op_type == "DepthToSpace";
    EXPECT_EQ(transposes, c.rewritten ? 0 : 1);
    EXPECT_EQ(convs, c.rewritten ? 1 : 0);
    EXPECT_EQ(d2s, c.rewritten ? 1 : 0);
    EngineOptions off;
    off.fusion.enabled = false;
    Engine unfused(Graph(fused.graph()), off);
    for (Engine* e : {&fused, &unfused}) {
      const Tensor got = e->run({{"x", x}}).at("y");
      EXPECT_EQ(compare_tensors(got, want, {1e-5, 1e-5}), "") << (e == &fused ? "fused" : "unfused");
    }
  }
}
