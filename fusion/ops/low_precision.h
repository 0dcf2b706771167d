// float16 / bfloat16 in kernels: conversions to and from float32 as integer bit arithmetic, round to
// nearest even, NaN kept NaN. Written out rather than left to Halide's casts so that the rounding
// and NaN handling are ours on every target (and equal to runtime/float16.h's host functions).
// Ops compute in float32: they widen fp16/bf16 inputs with to_f32 and narrow with from_f32.
#pragma once

#include <Halide.h>

#include "runtime/tensor.h"

namespace gaf {

// x of any Halide type as float32 (fp16/bf16 decoded exactly, other types cast).
Halide::Expr to_f32(const Halide::Expr& x);
// float32 x as Float(16) / BFloat(16), rounded to nearest even.
Halide::Expr f32_to_fp16(const Halide::Expr& x);
Halide::Expr f32_to_bf16(const Halide::Expr& x);

}  // namespace gaf
