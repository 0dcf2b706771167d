// The arithmetic precision kernels compute MatMuls in (`--precision`, EngineOptions::precision).
// Fp32: everything float32. Bf16: MatMul weights packed to bfloat16 at load and the A operand
// rounded to bfloat16 as the MatMul reads it, products summed in float32 (vdpbf16ps on CPUs with
// AVX512-BF16). Int8: MatMul weights quantized per output column (symmetric, int8) at load, each
// row of A quantized as the MatMul reads it (its own scale, uint8 around 128), int32 sums
// (vpdpbusd on CPUs with AVX512-VNNI), dequantized in the MatMul's output. Epilogues, norms,
// Softmax and residual sums stay float32 in all three. No Halide here.
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace gaf {

enum class Precision { Fp32, Bf16, Int8 };

// "fp32" / "bf16" / "int8"; GafError naming the accepted values otherwise.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

}  // namespace gaf
