// Elementwise and broadcast ops against hand-checked values (the conformance suite covers the
// ONNX cases; these pin down semantics ONNX's data does not: int division, bool storage, erf).
#include <cmath>

#include "test/op_test_util.h"

using namespace gaf;
using namespace gaf::testing;

TEST(BinaryOps, AddBroadcastsRowVector) {
  auto out = run_op("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(BinaryOps, IntegerDivTruncatesTowardZero) {
  auto out = run_op("Div", {i64({2}, {-7, 7}), i64({2}, {2, 2})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-3, 3}));
}

TEST(BinaryOps, IncompatibleShapesNameTheNode) {
  try {
    run_op("Mul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})});
    FAIL() << "expected an error";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("test_Mul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot be broadcast"), std::string::npos) << e.what();
  }
}

TEST(BinaryOps, LessGivesBool) {
  auto out = run_op("Less", {f32({3}, {1, 5, 3}), f32({1}, {3})});
  EXPECT_EQ(out[0].dtype(), DType::Bool);
  EXPECT_EQ(out[0].data<uint8_t>()[0], 1);
  EXPECT_EQ(out[0].data<uint8_t>()[1], 0);
  EXPECT_EQ(out[0].data<uint8_t>()[2], 0);
}

TEST(UnaryOps, ErfMatchesLibmAcrossRange) {
  std::vector<float> xs;
  for (int i = -400; i <= 400; ++i) xs.push_back(i * 0.01f);
  xs.push_back(1e-6f);
  xs.push_back(-3e-4f);
  auto out = run_op("Erf", {f32({static_cast<int64_t>(xs.size())}, xs)});
  for (size_t i = 0; i < xs.size(); ++i) {
    double ref = std::erf(static_cast<double>(xs[i]));
    EXPECT_NEAR(out[0].data<float>()[i], ref, 2e-7 + 1e-5 * std::fabs(ref)) << "x=" << xs[i];
  }
}

TEST(UnaryOps, GeluErfAtKnownPoints) {
  Attributes a;
  auto out = run_op("Gelu", {f32({3}, {-1, 0, 2})}, a);
  EXPECT_NEAR(out[0].data<float>()[0], -0.158655254f, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[1], 0.0f, 1e-7);
  EXPECT_NEAR(out[0].data<float>()[2], 1.954499736f, 1e-6);
}

TEST(UnaryOps, OddSizesVectorTail) {
  std::vector<float> x(37);
  for (int i = 0; i < 37; ++i) x[i] = i - 18.0f;
  auto out = run_op("Relu", {f32({37}, x)});
  for (int i = 0; i < 37; ++i) EXPECT_EQ(out[0].data<float>()[i], std::max(0.0f, x[i]));
}
