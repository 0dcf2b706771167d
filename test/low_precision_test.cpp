// The low-precision dtypes (float16, bfloat16, int8, uint8, int32): .npy and TensorProto reading,
// Cast's rounding, and a quantize / dequantize round trip.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>

#include "op_test_util.h"
#include "runtime/tensor_io.h"
#include "tensor_compare.h"

namespace gaf {
namespace {

using testing::run_op;

std::string scratch(const std::string& name) {
  std::filesystem::create_directories(GAF_TEST_SCRATCH);
  return std::string(GAF_TEST_SCRATCH) + "/" + name;
}

Tensor sample(DType t) { return Tensor::from_values(t, {2, 3}, std::vector<double>{-3, -1, 0, 1, 2.5, 100}); }

TEST(LowPrecision, NpyRoundTripEachNewDtype) {
  for (DType t : {DType::Float16, DType::Int8, DType::UInt8, DType::Int32}) {
    Tensor x = t == DType::UInt8 ? Tensor::from_values(t, {2, 3}, std::vector<int>{0, 1, 7, 128, 200, 255}) : sample(t);
    const std::string path = scratch(std::string("lp_") + dtype_name(t) + ".npy");
    write_npy(path, x);
    Tensor y = read_npy(path);
    EXPECT_EQ(y.dtype(), t) << dtype_name(t);
    EXPECT_EQ(testing::compare_tensors(y, x, {0, 0}), "") << dtype_name(t);
  }
  // NumPy has no bfloat16: refused with one line rather than written under a made-up code.
  try {
    write_npy(scratch("lp_bf16.npy"), sample(DType::BFloat16));
    FAIL() << "bfloat16 .npy written";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

TEST(LowPrecision, TensorProtoEachDtypeTypedAndRaw) {
  const std::vector<std::pair<int, DType>> types = {{onnx::TensorProto::FLOAT16, DType::Float16},
                                                    {onnx::TensorProto::BFLOAT16, DType::BFloat16},
                                                    {onnx::TensorProto::INT8, DType::Int8},
                                                    {onnx::TensorProto::UINT8, DType::UInt8},
                                                    {onnx::TensorProto::INT32, DType::Int32}};
  for (const auto& [code, t] : types) {
    Tensor want =
        t == DType::UInt8 ? Tensor::from_values(t, {2, 3}, std::vector<int>{0, 1, 7, 128, 200, 255}) : sample(t);
    onnx::TensorProto typed, raw;
    for (auto* p : {&typed, &raw}) {
      p->set_data_type(code);
      p->add_dims(2);
      p->add_dims(3);
    }
    // ONNX stores every type narrower than 32 bits one element per int32_data entry; float16 and
    // bfloat16 as their bit patterns.
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (t == DType::Float16 || t == DType::BFloat16)
        typed.add_int32_data(want.data<uint16_t>()[i]);
      else
        typed.add_int32_data(static_cast<int32_t>(want.as_int(i)));
    }
    raw.set_raw_data(std::string(static_cast<const char*>(want.raw()), want.nbytes()));
    for (const auto* p : {&typed, &raw}) {
      Tensor got = tensor_from_proto(*p, "test");
      EXPECT_EQ(got.dtype(), t);
      EXPECT_EQ(testing::compare_tensors(got, want, {0, 0}), "") << dtype_name(t);
    }
  }
}

float cast_through(DType t, float v) {
  Attributes to;
  to.set("to", int64_t{t == DType::BFloat16 ? 16 : 10});
  Tensor low = run_op("Cast", {testing::f32({1}, {v})}, to)[0];
  EXPECT_EQ(low.dtype(), t);
  Attributes back;
  back.set("to", int64_t{1});
  return run_op("Cast", {low}, back)[0].data<float>()[0];
}

TEST(LowPrecision, CastRoundsToNearestEven) {
  // bfloat16 keeps 8 significand bits: 1 + 2^-8 is a tie rounded down to even (1.0), 1 + 3 * 2^-8
  // a tie rounded up to even (1 + 2^-6), anything above a tie rounds up.
  EXPECT_EQ(cast_through(DType::BFloat16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(cast_through(DType::BFloat16, 1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(cast_through(DType::BFloat16, 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
            1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(cast_through(DType::BFloat16, -INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(cast_through(DType::BFloat16, NAN)));
  // float16: 11 significand bits, largest finite 65504, subnormals down to 2^-24.
  EXPECT_EQ(cast_through(DType::Float16, 1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(cast_through(DType::Float16, 1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(cast_through(DType::Float16, 65504.0f), 65504.0f);
  EXPECT_EQ(cast_through(DType::Float16, 65520.0f), INFINITY);
  EXPECT_EQ(cast_through(DType::Float16, std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
  EXPECT_EQ(cast_through(DType::Float16, std::ldexp(1.0f, -25)), 0.0f);  // tie to even (0)
  EXPECT_EQ(cast_through(DType::Float16, 3 * std::ldexp(1.0f, -25)), std::ldexp(1.0f, -23));
  EXPECT_TRUE(std::isnan(cast_through(DType::Float16, NAN)));
  // The kernels and the host conversions (runtime/float16.h) agree over a sweep of float bits.
  std::vector<float> xs;
  for (uint32_t u = 0; u < 0xffffffffu - 0x00fff123u; u += 0x00fff123u) xs.push_back(bits_float(u));
  for (DType t : {DType::Float16, DType::BFloat16}) {
    Attributes to;
    to.set("to", int64_t{t == DType::BFloat16 ? 16 : 10});
    Tensor got = run_op("Cast", {Tensor::from_values(DType::Float32, {static_cast<int64_t>(xs.size())}, xs)}, to)[0];
    Tensor want = Tensor::from_values(t, {static_cast<int64_t>(xs.size())}, xs);
    EXPECT_EQ(testing::compare_tensors(got, want, {0, 0}), "") << dtype_name(t);
  }
}

TEST(LowPrecision, QuantizeDequantizeRoundTrip) {
  Tensor x = testing::f32({6}, {-1.0f, 0.0f, 0.005f, 0.015f, 1.27f, 2.0f});
  Tensor scale = testing::f32({}, {0.01f});
  Tensor zp = Tensor::from_values(DType::Int8, {}, std::vector<int>{0});
  Tensor q = run_op("QuantizeLinear", {x, scale, zp})[0];
  ASSERT_EQ(q.dtype(), DType::Int8);
  // 0.5 and 1.5 steps round to even (0, 2); 2.0 saturates at 127.
  EXPECT_EQ(q.to_int_vector(), (std::vector<int64_t>{-100, 0, 0, 2, 127, 127}));
  Tensor back = run_op("DequantizeLinear", {q, scale, zp})[0];
  ASSERT_EQ(back.dtype(), DType::Float32);
  for (int64_t i = 0; i < 5; ++i) EXPECT_NEAR(back.data<float>()[i], x.data<float>()[i], 0.005f + 1e-6f) << i;
  EXPECT_FLOAT_EQ(back.data<float>()[5], 1.27f);
}

}  // namespace
}  // namespace gaf
