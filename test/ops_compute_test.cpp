// MatMul, reduction and normalisation ops against straightforward C++ loops (double precision),
// at odd sizes (vector tails, sizes below one vector) and with the attributes ONNX defines.
#include <chrono>
#include <cmath>
#include <map>

#include "test/op_test_util.h"

using namespace gaf;
using namespace gaf::testing;

namespace {

// Deterministic values in [-2, 2).
std::vector<float> pseudo_random(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) % 4096) / 1024.0f - 2.0f;
  }
  return v;
}

Tensor random_f32(const Shape& s, uint32_t seed) { return f32(s, pseudo_random(shape_numel(s), seed)); }

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Element of `t` at `out_idx` under numpy broadcasting (right-aligned, size-1 dims read at 0).
float bread(const Tensor& t, const std::vector<int64_t>& out_idx) {
  std::vector<int64_t> idx(t.rank());
  size_t off = out_idx.size() - t.rank();
  for (int d = 0; d < t.rank(); ++d) idx[d] = t.shape()[d] == 1 ? 0 : out_idx[off + d];
  return t.data<float>()[ravel(idx, t.shape())];
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at flat index " << i;
}

// Row statistics of `x` over the flagged axes, indexed by the keepdims-layout flat index.
struct RowRef {
  Shape shape, out_shape;
  std::vector<bool> reduced;
  int64_t row(int64_t flat) const {
    std::vector<int64_t> idx = unravel(flat, shape);
    for (size_t d = 0; d < idx.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    return ravel(idx, out_shape);
  }
  RowRef(Shape s, std::vector<bool> r) : shape(s), out_shape(s), reduced(r) {
    for (size_t d = 0; d < s.size(); ++d)
      if (r[d]) out_shape[d] = 1;
  }
  int64_t rows() const { return shape_numel(out_shape); }
  std::vector<double> sum(const std::vector<double>& x) const {
    std::vector<double> out(rows(), 0.0);
    for (size_t i = 0; i < x.size(); ++i) out[row(i)] += x[i];
    return out;
  }
  std::vector<double> max(const std::vector<double>& x) const {
    std::vector<double> out(rows(), -INFINITY);
    for (size_t i = 0; i < x.size(); ++i) out[row(i)] = std::max(out[row(i)], x[i]);
    return out;
  }
  std::vector<double> mean(const std::vector<double>& x) const {
    std::vector<double> s = sum(x);
    for (double& v : s) v /= static_cast<double>(x.size() / rows());
    return s;
  }
  std::vector<double> var(const std::vector<double>& x) const {
    std::vector<double> m = mean(x), d(x.size());
    for (size_t i = 0; i < x.size(); ++i) d[i] = (x[i] - m[row(i)]) * (x[i] - m[row(i)]);
    return mean(d);
  }
};

std::vector<double> doubles(const Tensor& t) {
  return std::vector<double>(t.data<float>(), t.data<float>() + t.numel());
}

Attributes attrs_int(std::initializer_list<std::pair<const char*, int64_t>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, AttrValue(v));
  return a;
}

}  // namespace

// ---------------------------------------------------------------------------------- MatMul

// numpy matmul reference for rank >= 2 operands with broadcast batch dims.
static std::vector<double> ref_matmul(const Tensor& a, const Tensor& b, const Shape& out_shape) {
  int64_t K = a.shape().back();
  std::vector<double> out(shape_numel(out_shape), 0.0);
  for (int64_t f = 0; f < static_cast<int64_t>(out.size()); ++f) {
    std::vector<int64_t> idx = unravel(f, out_shape);
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      std::vector<int64_t> ia = idx, ib = idx;
      ia.back() = k;
      ib[ib.size() - 2] = k;
      acc += static_cast<double>(bread(a, ia)) * bread(b, ib);
    }
    out[f] = acc;
  }
  return out;
}

TEST(MatMul, TwoDimensionalOddAndSmallSizes) {
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {3, 2, 4}, {5, 13, 11}, {7, 20, 19}, {9, 8, 16}, {2, 33, 8}}) {
    Tensor a = random_f32({M, K}, 1), b = random_f32({K, N}, 2);
    auto out = run_op("MatMul", {a, b});
    ASSERT_EQ(out[0].shape(), (Shape{M, N}));
    expect_close(out[0], ref_matmul(a, b, {M, N}), 1e-5,
                 std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
  }
}

TEST(MatMul, BatchedBroadcast) {
  Tensor a = random_f32({2, 1, 3, 5}, 3), b = random_f32({4, 5, 6}, 4);
  auto out = run_op("MatMul", {a, b});
  ASSERT_EQ(out[0].shape(), (Shape{2, 4, 3, 6}));
  expect_close(out[0], ref_matmul(a, b, {2, 4, 3, 6}), 1e-5);

  // 3-D x 2-D (the transformer projection form) and 2-D x 3-D.
  Tensor c = random_f32({3, 7, 9}, 5), d = random_f32({9, 10}, 6);
  out = run_op("MatMul", {c, d});
  ASSERT_EQ(out[0].shape(), (Shape{3, 7, 10}));
  expect_close(out[0], ref_matmul(c, d, {3, 7, 10}), 1e-5);
  Tensor e = random_f32({4, 9}, 7), f = random_f32({2, 9, 3}, 8);
  out = run_op("MatMul", {e, f});
  ASSERT_EQ(out[0].shape(), (Shape{2, 4, 3}));
  expect_close(out[0], ref_matmul(e, f, {2, 4, 3}), 1e-5);
}

TEST(MatMul, OneDimensionalOperandsArePromotedAndSqueezed) {
  Tensor v = random_f32({5}, 9), m = random_f32({2, 5, 3}, 10), w = random_f32({2, 3, 5}, 11);
  // [5] x [2,5,3] -> [2,3]: v as [1,5], the 1 removed.
  auto out = run_op("MatMul", {v, m});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_close(out[0], ref_matmul(v.reshaped({1, 5}), m, {2, 1, 3}), 1e-5);
  // [2,3,5] x [5] -> [2,3]
  out = run_op("MatMul", {w, v});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_close(out[0], ref_matmul(w, v.reshaped({5, 1}), {2, 3, 1}), 1e-5);
  // [5] x [5] -> scalar
  out = run_op("MatMul", {v, v});
  ASSERT_EQ(out[0].shape(), (Shape{}));
  double dot = 0;
  for (int i = 0; i < 5; ++i) dot += double(v.data<float>()[i]) * v.data<float>()[i];
  EXPECT_NEAR(out[0].data<float>()[0], dot, 1e-5);
}

TEST(MatMul, Int64IsExact) {
  auto out = run_op("MatMul", {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({3, 1}, {1000000007, -2, 1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1000000007 - 4 + 3, 4000000028LL - 10 + 6}));
}

TEST(MatMul, InnerDimensionMismatchNamesTheNode) {
  try {
    run_op("MatMul", {random_f32({2, 3}, 1), random_f32({4, 2}, 2)});
    FAIL() << "expected an error";
  } catch (const GafError& e) {
    EXPECT_NE(std::string(e.what()).find("test_MatMul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inner dimensions"), std::string::npos) << e.what();
  }
}

TEST(MatMul, BertSizedProjectionIsFast) {
  Tensor a = random_f32({1, 128, 768}, 1), b = random_f32({768, 3072}, 2);
  run_op("MatMul", {a, b});  // compiles
  auto t0 = std::chrono::steady_clock::now();
  auto out = run_op("MatMul", {a, b});
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(sec, 1.0) << "128x768x3072 took " << sec << " s";
  // Spot-check a few elements.
  for (int64_t f : {0L, 3071L, 128L * 3072 - 1, 77L * 3072 + 1234}) {
    int64_t m = f / 3072, n = f % 3072;
    double acc = 0;
    for (int64_t k = 0; k < 768; ++k) acc += double(a.data<float>()[m * 768 + k]) * b.data<float>()[k * 3072 + n];
    EXPECT_NEAR(out[0].data<float>()[f], acc, 1e-3);
  }
}

// ------------------------------------------------------------------------------------ Gemm

static std::vector<double> ref_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha,
                                    double beta) {
  int64_t M = a.shape()[ta ? 1 : 0], K = a.shape()[ta ? 0 : 1], N = b.shape()[tb ? 0 : 1];
  std::vector<double> y(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(a.data<float>()[ta ? k * M + m : m * K + k]) * b.data<float>()[tb ? n * K + k : k * N + n];
      y[m * N + n] = alpha * acc + (c ? beta * bread(*c, {m, n}) : 0.0);
    }
  return y;
}

TEST(Gemm, AllAttributesAndCShapes) {
  const int64_t M = 5, K = 11, N = 9;
  auto check = [&](int ta, int tb, const Shape& cs) {
    Tensor a = random_f32(ta ? Shape{K, M} : Shape{M, K}, 20 + ta);
    Tensor b = random_f32(tb ? Shape{N, K} : Shape{K, N}, 30 + tb);
    Tensor c = random_f32(cs, 40);
    Attributes at = attrs_int({{"transA", ta}, {"transB", tb}});
    at.set("alpha", AttrValue(0.5f));
    at.set("beta", AttrValue(-2.0f));
    auto out = run_op("Gemm", {a, b, c}, at);
    ASSERT_EQ(out[0].shape(), (Shape{M, N}));
    expect_close(out[0], ref_gemm(a, b, &c, ta, tb, 0.5, -2.0), 1e-5,
                 "transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) + " C=" + shape_str(cs));
  };
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) check(ta, tb, {M, N});
  for (Shape cs : std::vector<Shape>{{N}, {M, 1}, {}, {1, 1}}) check(1, 0, cs);
}

TEST(Gemm, DefaultsAndNoC) {
  Tensor a = random_f32({3, 4}, 1), b = random_f32({4, 2}, 2);
  auto out = run_op("Gemm", {a, b});
  expect_close(out[0], ref_gemm(a, b, nullptr, false, false, 1, 1), 1e-5);
  Tensor c = random_f32({2}, 3);
  out = run_op("Gemm", {a, b, c});
  expect_close(out[0], ref_gemm(a, b, &c, false, false, 1, 1), 1e-5);
}

TEST(Gemm, CThatDoesNotBroadcastIsRejected) {
  EXPECT_THROW(run_op("Gemm", {random_f32({3, 4}, 1), random_f32({4, 2}, 2), random_f32({3}, 3)}), GafError);
}

// ------------------------------------------------------------------------------ Reductions

struct ReduceCase {
  const char* op;
  Shape shape;
  std::vector<int64_t> axes;  // empty: attribute absent
  int keepdims;
};

TEST(Reduce, MeanSumMaxAxesAndKeepdims) {
  std::vector<ReduceCase> cases = {
      {"ReduceSum", {3, 13}, {1}, 1},     {"ReduceSum", {3, 13}, {-1}, 0},    {"ReduceMean", {2, 5, 7}, {0, 2}, 1},
      {"ReduceMean", {2, 5, 7}, {-2}, 0}, {"ReduceMax", {4, 3, 17}, {-1}, 0}, {"ReduceMax", {4, 3, 17}, {0}, 1},
      {"ReduceMean", {6, 5}, {}, 1},      {"ReduceSum", {6, 5}, {}, 0},       {"ReduceMax", {2, 3}, {-1, -2}, 0},
  };
  for (const ReduceCase& rc : cases) {
    std::string what = std::string(rc.op) + " " + shape_str(rc.shape) + " keepdims=" + std::to_string(rc.keepdims);
    Tensor x = random_f32(rc.shape, 7);
    int rank = static_cast<int>(rc.shape.size());
    std::vector<bool> reduced(rank, rc.axes.empty());
    for (int64_t a : rc.axes) reduced[a < 0 ? a + rank : a] = true;
    RowRef ref(rc.shape, reduced);
    Shape want_shape;
    for (int d = 0; d < rank; ++d)
      if (!reduced[d] || rc.keepdims) want_shape.push_back(reduced[d] ? 1 : rc.shape[d]);

    Attributes at = attrs_int({{"keepdims", rc.keepdims}});
    std::vector<Tensor> ins = {x};
    // ReduceSum takes its axes as input 1 (opset 13+); the others as an attribute.
    if (std::string(rc.op) == "ReduceSum") {
      if (!rc.axes.empty()) ins.push_back(i64({static_cast<int64_t>(rc.axes.size())}, rc.axes));
    } else if (!rc.axes.empty()) {
      at.set("axes", AttrValue(rc.axes));
    }
    auto out = run_op(rc.op, ins, at);
    ASSERT_EQ(out[0].shape(), want_shape) << what;
    std::string op = rc.op;
    std::vector<double> want = op == "ReduceSum"    ? ref.sum(doubles(x))
                               : op == "ReduceMean" ? ref.mean(doubles(x))
                                                    : ref.max(doubles(x));
    expect_close(out[0], want, 1e-5, what);
  }
}

TEST(Reduce, AxesAsAttributeForOldReduceSum) {
  Attributes at = attrs_int({{"keepdims", 0}});
  at.set("axes", AttrValue(std::vector<int64_t>{0}));
  auto out = run_op("ReduceSum", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, at);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{5, 7, 9}));
}

TEST(Reduce, NoopWithEmptyAxes) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor no_axes = i64({0}, {});
  auto out = run_op("ReduceSum", {x, no_axes}, attrs_int({{"noop_with_empty_axes", 1}}));
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_f32(out[0]), values_f32(x));
  out = run_op("ReduceSum", {x, no_axes}, attrs_int({{"keepdims", 0}}));
  EXPECT_EQ(out[0].shape(), (Shape{}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{21}));
}

TEST(Reduce, Int64SumAndMax) {
  Tensor x = i64({2, 3}, {1, -5, 3, 4000000000LL, 5, -6});
  auto out = run_op("ReduceSum", {x, i64({1}, {1})}, attrs_int({{"keepdims", 0}}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-1, 3999999999LL}));
  Attributes at = attrs_int({{"keepdims", 0}});
  at.set("axes", AttrValue(std::vector<int64_t>{0}));
  out = run_op("ReduceMax", {x}, at);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{4000000000LL, 5, 3}));
}

TEST(Reduce, RepeatedAxisIsRejected) {
  Attributes at;
  at.set("axes", AttrValue(std::vector<int64_t>{1, -1}));
  EXPECT_THROW(run_op("ReduceMean", {random_f32({2, 3}, 1)}, at), GafError);
}

// ---------------------------------------------------------------------------- Softmax

static std::vector<double> ref_softmax(const Tensor& x, const std::vector<bool>& reduced, bool log) {
  RowRef ref(x.shape(), reduced);
  std::vector<double> xs = doubles(x), mx = ref.max(xs), e(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) e[i] = std::exp(xs[i] - mx[ref.row(i)]);
  std::vector<double> s = ref.sum(e), y(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    y[i] = log ? xs[i] - mx[ref.row(i)] - std::log(s[ref.row(i)]) : e[i] / s[ref.row(i)];
  return y;
}

TEST(Softmax, DefaultLastAxisOddSizes) {
  for (Shape s : std::vector<Shape>{{3, 5}, {2, 37}, {4, 1}, {1, 8}, {2, 3, 9}}) {
    Tensor x = random_f32(s, 3);
    std::vector<bool> red(s.size(), false);
    red.back() = true;
    for (bool log : {false, true}) {
      auto out = run_op(log ? "LogSoftmax" : "Softmax", {x});
      ASSERT_EQ(out[0].shape(), s);
      expect_close(out[0], ref_softmax(x, red, log), 1e-5, shape_str(s));
    }
  }
}

TEST(Softmax, MiddleAxisOpset13) {
  Tensor x = random_f32({2, 5, 3}, 4);
  for (bool log : {false, true}) {
    auto out = run_op(log ? "LogSoftmax" : "Softmax", {x}, attrs_int({{"axis", 1}}));
    expect_close(out[0], ref_softmax(x, {false, true, false}, log), 1e-5);
  }
}

TEST(Softmax, LegacyOpsetCoercesTo2D) {
  Tensor x = random_f32({2, 5, 3}, 5);
  for (bool log : {false, true}) {
    // Opset 11, default axis 1: normalised over axes 1 and 2 together.
    auto out = run_op(log ? "LogSoftmax" : "Softmax", {x}, attrs_int({{"_opset", 11}}));
    expect_close(out[0], ref_softmax(x, {false, true, true}, log), 1e-5, "default axis");
    out = run_op(log ? "LogSoftmax" : "Softmax", {x}, attrs_int({{"_opset", 11}, {"axis", 2}}));
    expect_close(out[0], ref_softmax(x, {false, false, true}, log), 1e-5, "axis 2");
  }
}

TEST(Softmax, LargeValuesAreStable) {
  auto out = run_op("Softmax", {f32({1, 3}, {1000, 1001, 1002})});
  expect_close(out[0], {0.09003057317, 0.2447284711, 0.6652409558}, 1e-6);
  out = run_op("LogSoftmax", {f32({1, 3}, {-1000, -1001, -1002})});
  expect_close(out[0], {-0.4076059644, -1.4076059644, -2.4076059644}, 1e-6);
}

// ------------------------------------------------------------------------- LayerNorm

TEST(LayerNorm, Axis1Of3DWithBiasAndStatOutputs) {
  Shape s = {2, 3, 5};
  Tensor x = random_f32(s, 6), scale = random_f32({3, 5}, 7), bias = random_f32({3, 5}, 8);
  Attributes at = attrs_int({{"axis", 1}});
  at.set("epsilon", AttrValue(1e-3f));
  auto out = run_op("LayerNormalization", {x, scale, bias}, at, 3);
  RowRef ref(s, {false, true, true});
  std::vector<double> xs = doubles(x), m = ref.mean(xs), v = ref.var(xs), y(xs.size()), inv;
  for (double vv : v) inv.push_back(1.0 / std::sqrt(vv + 1e-3));
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    y[i] = (xs[i] - m[ref.row(i)]) * inv[ref.row(i)] * bread(scale, idx) + bread(bias, idx);
  }
  ASSERT_EQ(out[0].shape(), s);
  ASSERT_EQ(out[1].shape(), (Shape{2, 1, 1}));
  ASSERT_EQ(out[2].shape(), (Shape{2, 1, 1}));
  expect_close(out[0], y, 1e-5, "Y");
  expect_close(out[1], m, 1e-5, "Mean");
  expect_close(out[2], inv, 1e-5, "InvStdDev");
}

TEST(LayerNorm, LastAxisNoBiasOddWidth) {
  Shape s = {3, 4, 13};
  Tensor x = random_f32(s, 9), scale = random_f32({13}, 10);
  auto out = run_op("LayerNormalization", {x, scale});
  RowRef ref(s, {false, false, true});
  std::vector<double> xs = doubles(x), m = ref.mean(xs), v = ref.var(xs), y(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    y[i] = (xs[i] - m[ref.row(i)]) / std::sqrt(v[ref.row(i)] + 1e-5) * scale.data<float>()[i % 13];
  expect_close(out[0], y, 1e-5);
}

// ------------------------------------------------------------------------- BatchNorm

struct BnInputs {
  Tensor x, scale, bias, mean, var;
};
static BnInputs bn_inputs(const Shape& s) {
  int64_t C = s[1];
  std::vector<float> var = pseudo_random(C, 5);
  for (float& v : var) v = std::fabs(v) + 0.5f;
  return {random_f32(s, 1), random_f32({C}, 2), random_f32({C}, 3), random_f32({C}, 4), f32({C}, var)};
}

TEST(BatchNorm, Inference) {
  Shape s = {2, 3, 4, 5};
  BnInputs in = bn_inputs(s);
  Attributes at;
  at.set("epsilon", AttrValue(1e-2f));
  auto out = run_op("BatchNormalization", {in.x, in.scale, in.bias, in.mean, in.var}, at);
  std::vector<double> y(in.x.numel());
  for (int64_t i = 0; i < in.x.numel(); ++i) {
    int64_t c = unravel(i, s)[1];
    y[i] = (in.x.data<float>()[i] - in.mean.data<float>()[c]) / std::sqrt(double(in.var.data<float>()[c]) + 1e-2) *
               in.scale.data<float>()[c] +
           in.bias.data<float>()[c];
  }
  expect_close(out[0], y, 1e-5);
}

TEST(BatchNorm, TrainingModeMatchesOnnxReference) {
  Shape s = {3, 4, 2, 7};
  BnInputs in = bn_inputs(s);
  Attributes at = attrs_int({{"training_mode", 1}, {"_opset", 15}});
  at.set("momentum", AttrValue(0.8f));
  auto out = run_op("BatchNormalization", {in.x, in.scale, in.bias, in.mean, in.var}, at, 3);
  RowRef ref(s, {true, false, true, true});
  std::vector<double> xs = doubles(in.x), m = ref.mean(xs), v = ref.var(xs), y(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    int64_t c = unravel(i, s)[1];
    y[i] = (xs[i] - m[c]) / std::sqrt(v[c] + 1e-5) * in.scale.data<float>()[c] + in.bias.data<float>()[c];
  }
  std::vector<double> rm, rv;
  for (int c = 0; c < 4; ++c) {
    rm.push_back(in.mean.data<float>()[c] * 0.8 + m[c] * 0.2);
    rv.push_back(in.var.data<float>()[c] * 0.8 + v[c] * 0.2);
  }
  ASSERT_EQ(out[1].shape(), (Shape{4}));
  expect_close(out[0], y, 1e-5, "Y");
  expect_close(out[1], rm, 1e-5, "running_mean");
  expect_close(out[2], rv, 1e-5, "running_var");
}

TEST(BatchNorm, RunningStatsWithoutTrainingModeAreRejected) {
  BnInputs in = bn_inputs({2, 3, 4});
  EXPECT_THROW(run_op("BatchNormalization", {in.x, in.scale, in.bias, in.mean, in.var}, attrs_int({{"_opset", 15}}), 3),
               GafError);
}
