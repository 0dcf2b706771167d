// The vector math of fusion/ops/math.cpp against libm in double precision, over dense sweeps
// (steps of 1e-4 .. 1e-5 on the interesting ranges, every 2^k-th bit pattern across all
// magnitudes, denormals) and the special values (NaN, +-inf, +-0). The bounds are the ones the
// header states; errors are in ulps of the exact result (denormal spacing below FLT_MIN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "fusion/ops/math.h"

using namespace Halide;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// Vectorised as the kernels are (16 lanes; the sizes are padded to whole vectors).
std::vector<float> eval2(const std::function<Expr(Expr, Expr)>& f, std::vector<float> a, std::vector<float> b) {
  size_t n = a.size();
  size_t padded = (n + 15) / 16 * 16;
  a.resize(padded, 1.0f);
  b.resize(padded, 1.0f);
  Buffer<float> ba(a.data(), static_cast<int>(padded)), bb(b.data(), static_cast<int>(padded));
  Func g;
  Var i;
  g(i) = f(ba(i), bb(i));
  g.vectorize(i, 16);
  Buffer<float> out = g.realize({static_cast<int>(padded)});
  return std::vector<float>(out.data(), out.data() + n);
}

std::vector<float> eval(const std::function<Expr(Expr)>& f, const std::vector<float>& x) {
  return eval2([&](Expr a, Expr) { return f(a); }, x, std::vector<float>(x.size(), 0.0f));
}

double ulp_of(double exact) {
  double a = std::fabs(exact);
  if (a < std::numeric_limits<float>::min()) return std::ldexp(1.0, -149);
  if (a > std::numeric_limits<float>::max()) return std::ldexp(1.0, 104);
  int e;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 24);
}

// Error of `got` against `exact` in ulps of the exact result; 0 when both are the same special
// value, huge when only one is NaN. Near the overflow threshold a finite exact result may come out
// inf and one just past FLT_MAX finite: inf counts as 2^128, the value rounding to nearest gives it.
double ulps(float got, double exact) {
  if (std::isnan(exact) || std::isnan(got)) return std::isnan(exact) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(static_cast<float>(exact)) && got == static_cast<float>(exact)) return 0;
  if (std::isinf(exact)) return 1e30;
  if (got == 0 && exact == 0) return std::signbit(got) == std::signbit(exact) ? 0 : 1e30;
  double g = std::isinf(got) ? std::copysign(std::ldexp(1.0, 128), got) : got;
  return std::fabs(g - exact) / ulp_of(exact);
}

struct Worst {
  double err = 0;
  std::vector<float> at;
  void add(double e, std::vector<float> args) {
    if (e > err) err = e, at = std::move(args);
  }
  std::string where() const {
    std::string s;
    char buf[32];
    for (float v : at) std::snprintf(buf, sizeof buf, "%.9g ", v), s += buf;
    return s;
  }
};

std::vector<float> range(double lo, double hi, double step) {
  std::vector<float> v;
  for (double x = lo; x <= hi; x += step) v.push_back(static_cast<float>(x));
  return v;
}

// Every `stride`-th positive float bit pattern up to +inf (denormals and every binade), with
// their negatives when `negatives`.
std::vector<float> bit_sweep(uint32_t stride, bool negatives) {
  std::vector<float> v;
  for (uint64_t b = 1; b < 0x7f800000u; b += stride) {
    float f;
    uint32_t u = static_cast<uint32_t>(b);
    std::memcpy(&f, &u, 4);
    v.push_back(f);
    if (negatives) v.push_back(-f);
  }
  return v;
}

std::vector<float> specials() {
  return {0.0f,
          -0.0f,
          kInf,
          -kInf,
          kNan,
          -kNan,
          1e-45f,
          -1e-45f,
          1e-40f,
          -1e-40f,
          1.17549435e-38f,
          std::numeric_limits<float>::max(),
          -std::numeric_limits<float>::max(),
          1.0f,
          -1.0f};
}

Worst sweep(const std::function<Expr(Expr)>& f, const std::function<double(double)>& exact, std::vector<float> xs) {
  std::vector<float> s = specials();
  xs.insert(xs.end(), s.begin(), s.end());
  std::vector<float> got = eval(f, xs);
  Worst w;
  for (size_t k = 0; k < xs.size(); ++k) w.add(ulps(got[k], exact(xs[k])), {xs[k]});
  return w;
}

std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One function of one variable: its vector form, the exact result, the dense range it is swept
// over (plus every 1021st bit pattern of either sign and the special values), and its bound.
struct UnaryCase {
  const char* name;
  Expr (*vector_form)(const Expr&);
  double (*exact)(double);
  double lo, hi, step;
  double max_ulps;
};

class VectorMathUnary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(VectorMathUnary, WithinItsBound) {
  const UnaryCase& c = GetParam();
  Worst w = sweep(c.vector_form, c.exact, concat(range(c.lo, c.hi, c.step), bit_sweep(1021, true)));
  std::printf("%s: max %.3f ulp at %s\n", c.name, w.err, w.where().c_str());
  EXPECT_LE(w.err, c.max_ulps) << c.name << " at " << w.where();
}

INSTANTIATE_TEST_SUITE_P(
    VectorMath, VectorMathUnary,
    ::testing::Values(UnaryCase{"exp", gaf::exp_f32, [](double x) { return std::exp(x); }, -110, 95, 1e-4, 1.2},
                      UnaryCase{"log", gaf::log_f32, [](double x) { return std::log(x); }, 0.5, 2, 1e-6, 1.0},
                      UnaryCase{"tanh", gaf::tanh_f32, [](double x) { return std::tanh(x); }, -12, 12, 1e-5, 5.0},
                      UnaryCase{"sigmoid", gaf::sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -110,
                                110, 1e-4, 3.0},
                      UnaryCase{"erf", gaf::erf_f32, [](double x) { return std::erf(x); }, -6, 6, 1e-5, 6.0}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) { return std::string(info.param.name); });

// sin and cos in absolute error (near their zeros any error is many ulp): over |x| <= 1e5, and
// the special values (NaN for +-inf and NaN, sin(+-0) = +-0).
TEST(VectorMath, SinCosAbsoluteError) {
  std::vector<float> xs = concat(range(-20, 20, 1e-4), range(-1e5, 1e5, 0.37));
  for (int s = 0; s < 2; ++s) {
    auto f = s == 0 ? gaf::sin_f32 : gaf::cos_f32;
    std::vector<float> got = eval(f, xs);
    double worst = 0, at = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      const double want = s == 0 ? std::sin(static_cast<double>(xs[k])) : std::cos(static_cast<double>(xs[k]));
      const double e = std::abs(got[k] - want);
      if (e > worst) worst = e, at = xs[k];
    }
    std::printf("%s: max absolute error %.3g at %.9g\n", s == 0 ? "sin" : "cos", worst, at);
    EXPECT_LE(worst, 1.2e-7) << (s == 0 ? "sin" : "cos") << " at " << at;
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> special = eval(f, {inf, -inf, std::nanf(""), 0.0f, -0.0f});
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(std::isnan(special[k])) << k;
    EXPECT_EQ(special[3], s == 0 ? 0.0f : 1.0f);
    if (s == 0) EXPECT_TRUE(std::signbit(special[4])) << "sin(-0) = -0";
  }
}

// log also over every 257th positive bit pattern (denser than the others: its exponent path).
TEST(VectorMath, LogOverAllMagnitudes) {
  Worst w = sweep(
      gaf::log_f32, [](double x) { return std::log(x); }, bit_sweep(257, false));
  EXPECT_LE(w.err, 1.0) << w.where();
}

// a^b over a grid of bases (every magnitude, both signs) and exponents (integers, halves,
// fractions, large), against pow in double; the bound grows with |b ln a| (the rounding of
// b ln a in float32 before e^).
TEST(VectorMath, PowWithinBound) {
  std::vector<float> bases = concat(bit_sweep(1 << 14, true), range(-4, 4, 1e-3));
  std::vector<float> exps = {-3,   -2, -1.5f, -1, -0.5f, 0.25f, 0.5f,    1,   1.5f, 2,
                             2.5f, 3,  4,     7,  0.1f,  10.3f, -17.75f, 101, 1e-3f};
  std::vector<float> a, b;
  for (float x : bases)
    for (float y : exps) a.push_back(x), b.push_back(y);
  std::vector<float> got = eval2(gaf::pow_f32, a, b);
  Worst w, exact_int;
  for (size_t k = 0; k < a.size(); ++k) {
    double ref = std::pow(static_cast<double>(a[k]), static_cast<double>(b[k]));
    double e = ulps(got[k], ref);
    if (b[k] == 2 || b[k] == 3) exact_int.add(e, {a[k], b[k]});
    double scale = std::fabs(b[k] * std::log(std::fabs(static_cast<double>(a[k]))));
    if (!std::isfinite(scale)) scale = 0;
    w.add(e / (2.0 + 2.0 * scale), {a[k], b[k]});
  }
  std::printf("pow: max %.3f ulp per (2 + 2 |b ln a|) at %s; b = 2, 3: max %.3f ulp at %s\n", w.err, w.where().c_str(),
              exact_int.err, exact_int.where().c_str());
  EXPECT_LE(w.err, 1.0) << w.where();
  EXPECT_LE(exact_int.err, 2.0) << exact_int.where();
}

// C99 powf's special cases, the ones numpy and ONNX's reference follow.
TEST(VectorMath, PowSpecialCases) {
  std::vector<std::pair<float, float>> cases = {
      {kNan, 0},         {kNan, -0.0f},    {1, kNan}, {1, kInf},      {-1, kInf},    {-1, -kInf},    {-2, 0.5f},
      {-2, 3},           {-2, 2},          {-2, -1},  {0, -1},        {-0.0f, -1},   {-0.0f, -2},    {0, 0.5f},
      {-0.0f, 0.5f},     {-0.0f, 3},       {0, 2.5f}, {0.5f, kInf},   {0.5f, -kInf}, {2, kInf},      {2, -kInf},
      {-2, kInf},        {-0.5f, -kInf},   {kInf, 2}, {kInf, -2},     {-kInf, 3},    {-kInf, -3},    {-kInf, 2},
      {-kInf, 0.5f},     {kNan, 1},        {2, kNan}, {-8, 1.0f / 3}, {3, 0},        {1e-40f, 0.5f}, {-1e-40f, 2},
      {10, 38.5f},       {10, 39},         {2, -149}, {2, -150},      {2, 127},      {2, 128},       {-2, 127},
      {-2, 16777216.0f}, {-1, 16777217.0f}};
  std::vector<float> a, b;
  for (auto [x, y] : cases) a.push_back(x), b.push_back(y);
  std::vector<float> got = eval2(gaf::pow_f32, a, b);
  for (size_t k = 0; k < a.size(); ++k) {
    double scale = std::fabs(b[k] * std::log(std::fabs(static_cast<double>(a[k]))));
    double bound = 2.0 + 2.0 * (std::isfinite(scale) ? scale : 0.0);
    EXPECT_LE(ulps(got[k], std::pow(static_cast<double>(a[k]), static_cast<double>(b[k]))), bound)
        << "pow(" << a[k] << ", " << b[k] << ") = " << got[k] << ", powf gives " << std::pow(a[k], b[k]);
  }
}

}  // namespace
