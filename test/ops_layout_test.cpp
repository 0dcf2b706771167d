// Layout, indexing and constant ops against expectations computed independently (nested loops or
// values worked out by hand / with numpy). The conformance suite covers ONNX's own cases.
#include <cstdint>
#include <limits>

#include "test/op_test_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Tensor iota(Shape s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(s, v);
}

std::vector<float> iota_values(int64_t n) { return values_f32(iota({n})); }

Attributes attrs_ints(const std::string& name, std::vector<int64_t> v) {
  Attributes a;
  a.set(name, std::move(v));
  return a;
}

Attributes attr_int(const std::string& name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

}  // namespace

// ---- Transpose --------------------------------------------------------------------------------

TEST(Transpose, Rank4Permutation) {
  const int64_t D[4] = {2, 3, 4, 5};
  auto out = run_op("Transpose", {iota({2, 3, 4, 5})}, attrs_ints("perm", {2, 0, 3, 1}));
  ASSERT_EQ(out[0].shape(), (Shape{4, 2, 5, 3}));
  const float* y = out[0].data<float>();
  int64_t k = 0;
  for (int64_t c = 0; c < D[2]; ++c)
    for (int64_t a = 0; a < D[0]; ++a)
      for (int64_t d = 0; d < D[3]; ++d)
        for (int64_t b = 0; b < D[1]; ++b, ++k) ASSERT_EQ(y[k], ((a * D[1] + b) * D[2] + c) * D[3] + d) << "at " << k;
}

TEST(Transpose, DefaultReversesAxes) {
  auto out = run_op("Transpose", {iota({2, 3, 4})});
  ASSERT_EQ(out[0].shape(), (Shape{4, 3, 2}));
  const float* y = out[0].data<float>();
  int64_t k = 0;
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t a = 0; a < 2; ++a, ++k) ASSERT_EQ(y[k], (a * 3 + b) * 4 + c);
}

// ---- Reshape family ---------------------------------------------------------------------------

TEST(Reshape, ZeroCopiesAndMinusOneInfers) {
  auto out = run_op("Reshape", {iota({2, 3, 4}), i64({2}, {0, -1})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(values_f32(out[0]), iota_values(24));
}

TEST(Reshape, RegroupedDimsKeepRowMajorOrder) {
  // [2,3,4] -> [4,3,2] shares no dims, so every index is decomposed from the flat index.
  for (Shape target : {Shape{4, 3, 2}, Shape{3, 8}, Shape{1, 24, 1}, Shape{2, 2, 1, 6}}) {
    auto out = run_op("Reshape", {iota({2, 3, 4}), i64({static_cast<int64_t>(target.size())}, target)});
    EXPECT_EQ(out[0].shape(), target);
    EXPECT_EQ(values_f32(out[0]), iota_values(24)) << shape_str(target);
  }
}

TEST(Reshape, AllowZeroKeepsZeroDims) {
  Attributes a = attr_int("allowzero", 1);
  auto out = run_op("Reshape", {f32({3, 0}, {}), i64({2}, {0, 3})}, a);
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
}

TEST(Reshape, Opset1ShapeAttribute) {
  auto out = run_op("Reshape", {iota({2, 6})}, attrs_ints("shape", {3, -1}));
  EXPECT_EQ(out[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(values_f32(out[0]), iota_values(12));
}

TEST(Reshape, BadTargetNamesTheNode) {
  try {
    run_op("Reshape", {iota({2, 3}), i64({2}, {4, -1})});
    FAIL() << "expected an error";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("test_Reshape"), std::string::npos) << e.what();
  }
}

TEST(Flatten, AxisVariants) {
  EXPECT_EQ(run_op("Flatten", {iota({2, 3, 4})})[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(run_op("Flatten", {iota({2, 3, 4})}, attr_int("axis", 0))[0].shape(), (Shape{1, 24}));
  EXPECT_EQ(run_op("Flatten", {iota({2, 3, 4})}, attr_int("axis", 3))[0].shape(), (Shape{24, 1}));
  auto out = run_op("Flatten", {iota({2, 3, 4})}, attr_int("axis", -1));
  EXPECT_EQ(out[0].shape(), (Shape{6, 4}));
  EXPECT_EQ(values_f32(out[0]), iota_values(24));
}

TEST(Squeeze, NoAxesRemovesAllOnes) {
  auto out = run_op("Squeeze", {iota({1, 3, 1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_f32(out[0]), iota_values(6));
}

TEST(Squeeze, AxesAsInputAndAsAttribute) {
  auto a = run_op("Squeeze", {iota({1, 3, 1, 2}), i64({1}, {-2})});
  EXPECT_EQ(a[0].shape(), (Shape{1, 3, 2}));
  auto b = run_op("Squeeze", {iota({1, 3, 1, 2})}, attrs_ints("axes", {0}));
  EXPECT_EQ(b[0].shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values_f32(b[0]), iota_values(6));
  EXPECT_THROW(run_op("Squeeze", {iota({1, 3}), i64({1}, {1})}), GafError);
}

TEST(Unsqueeze, NegativeUnsortedAxes) {
  auto out = run_op("Unsqueeze", {iota({2, 3}), i64({2}, {-1, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(values_f32(out[0]), iota_values(6));
  auto mid = run_op("Unsqueeze", {iota({2, 3})}, attrs_ints("axes", {3, 1}));
  EXPECT_EQ(mid[0].shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(values_f32(mid[0]), iota_values(6));
}

// ---- Expand -----------------------------------------------------------------------------------

TEST(Expand, BroadcastsBothWays) {
  auto out = run_op("Expand", {f32({3, 1}, {1, 2, 3}), i64({3}, {2, 1, 4})});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  const float* y = out[0].data<float>();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(y[i], 1 + (i / 4) % 3) << i;
  // A target dim of 1 keeps the input's larger dim (bidirectional broadcast).
  auto keep = run_op("Expand", {f32({3, 1}, {1, 2, 3}), i64({1}, {1})});
  EXPECT_EQ(keep[0].shape(), (Shape{3, 1}));
  EXPECT_EQ(values_f32(keep[0]), (std::vector<float>{1, 2, 3}));
}

// ---- Slice ------------------------------------------------------------------------------------

TEST(Slice, NegativeStepsAndOutOfBoundPositions) {
  Tensor x = iota({10});
  auto run = [&](int64_t s, int64_t e, int64_t step) {
    return values_f32(run_op("Slice", {x, i64({1}, {s}), i64({1}, {e}), i64({1}, {0}), i64({1}, {step})})[0]);
  };
  // Values worked out with numpy's x[s:e:step] (same clamping rules as ONNX).
  EXPECT_EQ(run(-1, -100, -3), (std::vector<float>{9, 6, 3, 0}));
  EXPECT_EQ(run(20, 2, -2), (std::vector<float>{9, 7, 5, 3}));
  EXPECT_EQ(run(2, 1000, 3), (std::vector<float>{2, 5, 8}));
  EXPECT_EQ(run(-3, kMax, 1), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(run(5, 0, -1), (std::vector<float>{5, 4, 3, 2, 1}));
  EXPECT_EQ(run(0, kMax, kMax), (std::vector<float>{0}));
  auto empty = run_op("Slice", {x, i64({1}, {3}), i64({1}, {3})});
  EXPECT_EQ(empty[0].shape(), (Shape{0}));
}

TEST(Slice, AxesOptionalStepsAndNegativeAxis) {
  Tensor x = iota({3, 4});
  auto out = run_op("Slice", {x, i64({1}, {1}), i64({1}, {kMax}), i64({1}, {-1}), i64({1}, {2})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  // Both axes, steps absent: rows 1.., columns ..-1.
  auto both = run_op("Slice", {x, i64({2}, {1, 0}), i64({2}, {10, -1})});
  EXPECT_EQ(both[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_f32(both[0]), (std::vector<float>{4, 5, 6, 8, 9, 10}));
}

TEST(Slice, Opset1Attributes) {
  Attributes a;
  a.set("starts", std::vector<int64_t>{0, 1});
  a.set("ends", std::vector<int64_t>{-1, 1000});
  a.set("axes", std::vector<int64_t>{1, 0});
  auto out = run_op("Slice", {iota({3, 4})}, a);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{4, 5, 6, 8, 9, 10}));
}

// ---- Gather -----------------------------------------------------------------------------------

TEST(Gather, NegativeTwoDimIndicesOnAxis1) {
  auto out = run_op("Gather", {iota({2, 3}), i64({2, 2}, {-1, 0, 1, -2})}, attr_int("axis", 1));
  ASSERT_EQ(out[0].shape(), (Shape{2, 2, 2}));
  // out[i][j][k] = x[i][ind[j][k] mod 3]: ind wraps to [[2,0],[1,1]].
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 0, 1, 1, 5, 3, 4, 4}));
}

TEST(Gather, ScalarIndexDropsAxis) {
  auto out = run_op("Gather", {iota({3, 2}), i64({}, {-1})});
  EXPECT_EQ(out[0].shape(), (Shape{2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{4, 5}));
}

TEST(Gather, WideRowsEmbeddingLookup) {
  auto out = run_op("Gather", {iota({5, 19}), i64({3}, {4, 0, -4})});
  ASSERT_EQ(out[0].shape(), (Shape{3, 19}));
  const float* y = out[0].data<float>();
  const int64_t rows[3] = {4, 0, 1};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 19; ++c) ASSERT_EQ(y[r * 19 + c], rows[r] * 19 + c);
}

// ---- Concat / Split ---------------------------------------------------------------------------

TEST(Concat, ZeroSizeInputAndVectorTails) {
  Tensor a = iota({3, 10}), b = f32({3, 0}, {}), c = iota({3, 7});
  auto out = run_op("Concat", {a, b, c}, attr_int("axis", -1));
  ASSERT_EQ(out[0].shape(), (Shape{3, 17}));
  const float* y = out[0].data<float>();
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 17; ++k) ASSERT_EQ(y[r * 17 + k], k < 10 ? r * 10 + k : r * 7 + (k - 10)) << r << "," << k;
}

TEST(Concat, OuterAxisOfInt64) {
  auto out = run_op("Concat", {i64({1, 2}, {1, 2}), i64({2, 2}, {3, 4, 5, 6})}, attr_int("axis", 0));
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Split, EqualPartsFromOutputCount) {
  auto out = run_op("Split", {iota({2, 6})}, attr_int("axis", 1), 3);
  ASSERT_EQ(out.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out[k].shape(), (Shape{2, 2}));
    EXPECT_EQ(values_f32(out[k]), (std::vector<float>{2.f * k, 2.f * k + 1, 6 + 2.f * k, 7 + 2.f * k}));
  }
}

TEST(Split, SizesAsInputAndAsAttribute) {
  auto a = run_op("Split", {iota({5}), i64({2}, {2, 3})}, {}, 2);
  EXPECT_EQ(values_f32(a[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values_f32(a[1]), (std::vector<float>{2, 3, 4}));
  auto b = run_op("Split", {iota({5})}, attrs_ints("split", {4, 1}), 2);
  EXPECT_EQ(values_f32(b[0]), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(values_f32(b[1]), (std::vector<float>{4}));
}

TEST(Split, Opset18UnevenNumOutputs) {
  Attributes a;
  a.set("num_outputs", int64_t{3});
  a.set("_opset", int64_t{18});
  auto out = run_op("Split", {iota({5})}, a, 3);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values_f32(out[1]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values_f32(out[2]), (std::vector<float>{4}));
  EXPECT_THROW(run_op("Split", {iota({5})}, {}, 3), GafError);  // opset 13: must divide evenly
}

TEST(Split, ZeroSizePart) {
  auto out = run_op("Split", {iota({4, 2}), i64({3}, {0, 3, 1})}, {}, 3);
  EXPECT_EQ(out[0].shape(), (Shape{0, 2}));
  EXPECT_EQ(values_f32(out[1]), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values_f32(out[2]), (std::vector<float>{6, 7}));
}

// ---- Constant producers -----------------------------------------------------------------------

TEST(Shape, StartEndWithClamping) {
  Tensor x(DType::Float32, {2, 3, 4, 5});
  EXPECT_EQ(values_i64(run_op("Shape", {x})[0]), (std::vector<int64_t>{2, 3, 4, 5}));
  Attributes a;
  a.set("start", int64_t{1});
  a.set("end", int64_t{-1});
  EXPECT_EQ(values_i64(run_op("Shape", {x}, a)[0]), (std::vector<int64_t>{3, 4}));
  Attributes b;
  b.set("start", int64_t{-10});
  b.set("end", int64_t{100});
  EXPECT_EQ(values_i64(run_op("Shape", {x}, b)[0]), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(run_op("Shape", {x}, attr_int("start", 3))[0].shape(), (Shape{1}));
  Attributes e;
  e.set("start", int64_t{3});
  e.set("end", int64_t{1});
  EXPECT_EQ(run_op("Shape", {x}, e)[0].shape(), (Shape{0}));
}

TEST(Constant, TensorAndListAttributes) {
  Attributes a;
  a.set("value", f32({2, 2}, {1, 2, 3, 4}));
  auto t = run_op("Constant", {}, a);
  EXPECT_EQ(t[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_f32(t[0]), (std::vector<float>{1, 2, 3, 4}));
  auto ints = run_op("Constant", {}, attrs_ints("value_ints", {7, -8, 9}));
  EXPECT_EQ(values_i64(ints[0]), (std::vector<int64_t>{7, -8, 9}));
  Attributes f;
  f.set("value_float", 2.5f);
  auto scalar = run_op("Constant", {}, f);
  EXPECT_EQ(scalar[0].rank(), 0);
  EXPECT_EQ(scalar[0].data<float>()[0], 2.5f);
}

TEST(ConstantOfShape, DefaultAndTypedFill) {
  auto z = run_op("ConstantOfShape", {i64({2}, {2, 3})});
  EXPECT_EQ(z[0].dtype(), DType::Float32);
  EXPECT_EQ(values_f32(z[0]), std::vector<float>(6, 0.f));
  Attributes a;
  a.set("value", i64({1}, {-7}));
  auto v = run_op("ConstantOfShape", {i64({1}, {4})}, a);
  EXPECT_EQ(v[0].dtype(), DType::Int64);
  EXPECT_EQ(values_i64(v[0]), std::vector<int64_t>(4, -7));
  auto s = run_op("ConstantOfShape", {i64({0}, {})}, a);
  EXPECT_EQ(s[0].rank(), 0);
  EXPECT_EQ(values_i64(s[0]), std::vector<int64_t>{-7});
}
