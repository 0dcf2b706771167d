#include "fusion/ops/math.h"

#include <initializer_list>

namespace gaf {

using namespace Halide;

// Halide compiles float math with LLVM's fast-math flags (no NaNs, no infs, reassociation), so
// NaN/inf tests on floats may be folded away and regrouped sums may lose the low bits a range
// reduction keeps. Hence: special values are recognised and made from their bit patterns, and the
// reductions whose rounding matters are strict_float.
namespace {

Expr bits(const Expr& x) { return reinterpret<int32_t>(x); }
Expr from_bits(int32_t b) { return reinterpret<float>(Expr(b)); }
Expr is_finite_f32(const Expr& x) { return (bits(x) & 0x7fffffff) < 0x7f800000; }
const int32_t kInf = 0x7f800000, kNan = 0x7fc00000;

// c[0] t^(n-1) + ... + c[n-1], by Horner's rule.
Expr horner(const Expr& t, std::initializer_list<float> c) {
  Expr p = *c.begin();
  for (auto it = c.begin() + 1; it != c.end(); ++it) p = p * t + *it;
  return p;
}

// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so n * kLn2Hi is exact for |n| < 2^15.
const float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;

}  // namespace

// e^x = 2^n e^r, n = round(x / ln 2), |r| <= ln2 / 2; e^r = 1 + r + r^2 P(r), the minimax
// polynomial of Cephes' expf. 2^n is applied as 2^(n/2) 2^(n - n/2), both normal floats, so
// that e^x near the bottom of the range comes out as a correctly placed denormal.
Expr exp_f32(const Expr& x_in) {
  Expr x = cast<float>(x_in);
  // e^-104 is below half the smallest denormal, e^89 above FLT_MAX: the clamp keeps n in
  // [-150, 128], and the results there round to 0 and overflow to inf. Below -104 the result is
  // 0, made by a select from e^0: the scale multiplies would underflow there, one microcode assist
  // per vector (a padding mask's finfo.min keys made BERT's attention 1.6x slower, Zen 5).
  Expr zero = x < -104.0f;
  Expr xc = select(zero, 0.0f, min(x, 89.0f));
  Expr n = round(xc * 1.44269504088896341f);
  Expr r = strict_float(xc - n * kLn2Hi - n * kLn2Lo);
  Expr p = horner(
      r, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f});
  Expr er = p * r * r + r + 1.0f;
  Expr ni = cast<int32_t>(n);
  Expr half = ni >> 1;
  Expr scale1 = reinterpret<float>((half + 127) << 23);
  Expr scale2 = reinterpret<float>((ni - half + 127) << 23);
  // Not strict (that would make the whole polynomial strict, without FMAs, 1.4x slower); the
  // sweep test checks that the scales are applied in this order, down into the denormals.
  return select(is_nan_f32(x), x, select(zero, 0.0f, er * scale1 * scale2));
}

// ln x = e ln 2 + ln m, m in [sqrt(1/2), sqrt(2)); ln m = f - f^2/2 + f^3 P(f), f = m - 1 (exact),
// the minimax polynomial of Cephes' logf.
Expr log_f32(const Expr& x_in) {
  Expr x = cast<float>(x_in);
  Expr xb = bits(x);
  // A denormal is scaled by 2^23 first, so that its exponent field holds its magnitude.
  Expr denormal = xb < 0x00800000;  // also 0 and negatives: replaced below
  Expr sb = bits(select(denormal, x * 8388608.0f, x));
  Expr e = (sb >> 23) - select(denormal, 150, 127);
  Expr m = reinterpret<float>((sb & 0x007fffff) | 0x3f800000);  // [1, 2)
  Expr high = m > 1.41421356f;
  Expr f = select(high, m * 0.5f, m) - 1.0f;
  Expr ef = cast<float>(select(high, e + 1, e));
  Expr z = f * f;
  Expr p = horner(f, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                      -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f});
  // strict: f + small terms first, the large e ln 2 last (its low part with the small terms).
  Expr y = strict_float((f + (p * f * z + ef * kLn2Lo - 0.5f * z)) + ef * kLn2Hi);
  Expr ax = xb & 0x7fffffff;
  y = select(ax == 0, -from_bits(kInf), y);  // ln +-0 = -inf
  y = select(xb == kInf, from_bits(kInf), y);
  y = select(xb < 0 && ax != 0, from_bits(kNan), y);  // negative (incl. -inf)
  return select(ax > kInf, x, y);                     // NaN stays NaN
}

namespace {

// sin (quadrant offset 0) or cos (1): sin(r + q pi/2) by the quadrant q's polynomial and sign.
Expr sin_quadrant(const Expr& x_in, int offset) {
  Expr x = cast<float>(x_in);
  Expr xd = cast<double>(x);
  Expr j = round(xd * Expr(0.63661977236758134308));  // x / (pi / 2)
  Expr r = select(j == 0, x, cast<float>(xd - j * Expr(1.5707963267948966192)));
  Expr q = cast<int32_t>(clamp(j, Expr(-1e9), Expr(1e9))) + offset;
  Expr z = r * r;
  // cephes sinf / cosf on [-pi/4, pi/4]
  Expr s = r + r * z * horner(z, {-1.9515295891e-4f, 8.3321608736e-3f, -1.6666654611e-1f});
  Expr c = 1.0f - 0.5f * z + z * z * horner(z, {2.443315711809948e-5f, -1.388731625493765e-3f, 4.166664568298827e-2f});
  Expr y = select((q & 1) == 0, s, c);
  y = select((q & 2) == 0, y, -y);
  if (offset == 0) y = select(x == 0.0f, x, y);  // sin(+-0) = +-0
  return select(is_finite_f32(x), y, from_bits(kNan));
}

}  // namespace

Expr is_nan_f32(const Expr& x) { return (bits(x) & 0x7fffffff) > 0x7f800000; }
Expr is_inf_f32(const Expr& x) { return (bits(x) & 0x7fffffff) == 0x7f800000; }

Expr sin_f32(const Expr& x) { return sin_quadrant(x, 0); }
Expr cos_f32(const Expr& x) { return sin_quadrant(x, 1); }

Expr pow_f32(const Expr& a_in, const Expr& b_in) {
  Expr a = cast<float>(a_in), b = cast<float>(b_in);
  Expr mag = exp_f32(b * log_f32(abs(a)));
  Expr b_int = floor(b) == b;  // +-inf count as even integers
  Expr b_odd = b_int && abs(b) < 16777216.0f && (cast<int32_t>(b) & 1) == 1;
  Expr y = select(bits(a) < 0 && b_odd, -mag, mag);  // a = -0 and -inf too
  y = select(a < 0.0f && is_finite_f32(a) && is_finite_f32(b) && !b_int, from_bits(kNan), y);
  y = select(b == 0.0f || a == 1.0f || (a == -1.0f && is_inf_f32(b)), 1.0f, y);
  return select(b == 2.0f, a * a, select(b == 3.0f, a * a * a, y));
}

// Odd rational minimax form of tanh on [-7.9, 7.9], the coefficients of the fast float tanh in
// Eigen and XLA; the clamp is where the fraction reaches 1.
Expr tanh_f32(const Expr& x_in) {
  Expr x = cast<float>(x_in);
  Expr xc = clamp(x, -7.90531110763549805f, 7.90531110763549805f);
  Expr x2 = xc * xc;
  Expr p = horner(x2, {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f, 5.12229709037114e-08f,
                       1.48572235717979e-05f, 6.37261928875436e-04f, 4.89352455891786e-03f});
  Expr q = horner(x2, {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f, 4.89352518554385e-03f});
  // Below 4e-4, tanh x = x to within half an ulp (and denormals stay exact).
  Expr y = select(abs(x) < 0.0004f, x, xc * (p / q));
  return select(is_nan_f32(x), x, y);
}

// 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: e^-|x| never overflows, so results down
// into the denormals keep their precision.
Expr sigmoid_f32(const Expr& x_in) {
  Expr x = cast<float>(x_in);
  Expr e = exp_f32(-abs(x));
  Expr r = 1.0f / (1.0f + e);
  return select(x >= 0.0f, r, e * r);
}

// erf as one odd rational function of x on [-4, 4] (clamped outside, where fp32 erf is +-1):
// x * P(x^2) / Q(x^2), the form and coefficients of the fast float erf used by Eigen and XLA.
// One branch, no exp: it is evaluated per element in MatMul+GELU epilogues, where the former
// two-branch form (series below 0.5, exp-based Abramowitz-Stegun above, both computed and
// selected) cost a quarter of the FFN1 kernel. (Its error: math.h.)
Expr erf_f32(const Expr& x_in) {
  Expr xf = cast<float>(x_in);
  Expr x = clamp(xf, -4.0f, 4.0f);
  Expr x2 = x * x;
  Expr p = horner(x2, {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                       -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f});
  Expr q = horner(x2, {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                       -1.42647390514189e-02f});
  // Below 1e-4, erf x = 2x / sqrt(pi) to within half an ulp; x p / q would underflow for the
  // smallest x (and LLVM may regroup x (p / q) into it).
  Expr y = select(abs(xf) < 1e-4f, xf * 1.12837916709551257f, x * (p / q));
  return select(is_nan_f32(xf), xf, y);  // the clamp would turn NaN into -1
}

Expr gelu_erf_f32(const Expr& x) { return 0.5f * x * (1.0f + erf_f32(x * 0.70710678118654752f)); }

Expr gelu_tanh_f32(const Expr& x) {
  return 0.5f * x * (1.0f + tanh_f32(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

}  // namespace gaf
