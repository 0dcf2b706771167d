// Vectorisable float32 math that Halide does not provide (erf) and the GELU forms built on it.
// Used by the op families; one definition each, so every op that needs erf computes the same thing.
#pragma once

#include <Halide.h>

namespace gaf {

// erf for float32: Taylor series near 0 (keeps relative accuracy for small |x|), Abramowitz &
// Stegun 7.1.26 elsewhere (absolute error <= 1.5e-7).
Halide::Expr erf_f32(const Halide::Expr& x);
// 0.5 x (1 + erf(x / sqrt 2))
Halide::Expr gelu_erf_f32(const Halide::Expr& x);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
Halide::Expr gelu_tanh_f32(const Halide::Expr& x);

}  // namespace gaf
