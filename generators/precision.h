// The arithmetic precision kernels compute MatMuls in (`--precision`, EngineOptions::precision).
// Fp32: everything float32. Bf16: MatMul weights packed to bfloat16 at load and the A operand
// rounded to bfloat16 as the MatMul reads it, products summed in float32 (vdpbf16ps on CPUs with
// AVX512-BF16); epilogues, norms, Softmax and residual sums stay float32. No Halide here.
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace gaf {

enum class Precision { Fp32, Bf16 };

// "fp32" / "bf16"; GafError naming the accepted values otherwise.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

}  // namespace gaf
