// Vectorisable float32 math: every transcendental function an op computes, as polynomial or
// rational forms that compile to vector instructions. Halide 14 lowers tanh to one libm call per
// lane, and vector exp/log/pow to its own polynomials, which get special values wrong (exp of
// large x, log(inf), pow(0, -1) = 0, pow(1, NaN) = 0, tiny results flushed) and are 5 ulp (exp)
// to 111 ulp (pow(x, 3)) off. These keep libm's special values (NaN, +-inf, +-0, denormals) and
// state their max error against the exact result (libm in double precision), which
// test/vector_math_test.cpp checks over dense sweeps. One definition each.
#pragma once

#include <Halide.h>

namespace gaf {

// e^x: Cody-Waite reduction by ln 2, degree-7 polynomial, scale by 2^n in two normal steps so
// that results down into the denormals round once. Max error 1.1 ulp; 0 and inf beyond range.
Halide::Expr exp_f32(const Halide::Expr& x);
// ln x: exponent and mantissa in [sqrt(1/2), sqrt(2)), degree-10 polynomial in (m - 1).
// Max error 0.81 ulp, denormal inputs included; ln 0 = -inf, ln x<0 = NaN.
Halide::Expr log_f32(const Halide::Expr& x);
// a^b with C's special cases (b = 0 or a = 1: 1; a < 0: real only for integer b, odd b keeps
// the sign; 0, inf and NaN as powf). b = 2 and 3 (LayerNorm's square, GELU's cube) are
// products: max error 1.2 ulp. Other exponents e^(b ln|a|): b ln a is rounded to float32
// before e^, so the error grows with it: max (2 + 2 |b ln a|) ulp, i.e. relative 1e-7 for
// results near 1 and 2e-5 near FLT_MAX or FLT_MIN (libm's powf: 0.5 ulp).
Halide::Expr pow_f32(const Halide::Expr& a, const Halide::Expr& b);
// NaN / +-inf tests of a float32 from its bit pattern: Halide compiles float math with LLVM's
// fast-math flags, under which is_nan / is_inf on floats may be folded away.
Halide::Expr is_nan_f32(const Halide::Expr& x);
Halide::Expr is_inf_f32(const Halide::Expr& x);
// sin x, cos x: x reduced by pi/2 in float64 (x - j pi/2 with j = round(x 2/pi): exact enough
// for |x| up to ~1e9, so rotary embeddings' position x frequency stay accurate), then the
// quadrant's odd or even polynomial on [-pi/4, pi/4] in float32. Max absolute error 9.2e-8 over
// |x| <= 1e5 (test/vector_math_test.cpp); past ~1e9 the reduction loses the phase; inf and NaN
// give NaN.
Halide::Expr sin_f32(const Halide::Expr& x);
Halide::Expr cos_f32(const Halide::Expr& x);
// tanh: odd rational x P(x^2) / Q(x^2) clamped at +-7.9 (where fp32 tanh is +-1), x itself
// below 4e-4. Max error 4.9 ulp (3e-7 absolute, near |x| = 5).
Halide::Expr tanh_f32(const Halide::Expr& x);
// 1 / (1 + e^-|x|), times e^-|x| for x < 0, on exp_f32. Max error 2.3 ulp (denormal results
// included, where 1 / (1 + e^-x) would underflow early).
Halide::Expr sigmoid_f32(const Halide::Expr& x);
// erf: odd rational x P(x^2) / Q(x^2) on [-4, 4], +-1 outside, 2x / sqrt(pi) below 1e-4.
// Max error 5.6 ulp (3.3e-7 absolute, near |x| = 3.9).
Halide::Expr erf_f32(const Halide::Expr& x);
// 0.5 x (1 + erf(x / sqrt 2))
Halide::Expr gelu_erf_f32(const Halide::Expr& x);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
Halide::Expr gelu_tanh_f32(const Halide::Expr& x);

}  // namespace gaf
