// A MatMul as onnxruntime's dynamic quantization writes it (quantize_dynamic, QOperator format):
//   DynamicQuantizeLinear(x) -> (xq, xs, xzp)
//   MatMulInteger(xq, Wq, xzp, Wzp) -> Cast(to float) -> Mul(., Mul(xs, Ws)) -> y
// with Wq, Wzp and Ws constants (zero point and scale per tensor or per column) is rewritten to
// one MatMul(x, (Wq - Wzp) * Ws) marked `_int8_weights` = 1: the weights were quantized by the
// model, so packing keeps them int8 (generators/weight_packing.h) where the CPU has int8 dot
// products, and the planner sees an ordinary MatMul + epilogue. The activations are quantized
// per row by the int8 kernel rather than per tensor as DynamicQuantizeLinear does: the
// products differ from the model's exact integer math by that rounding only (closer to float).
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// Returns the number of MatMuls rewritten; the nodes left unused are for dead-node removal.
int rewrite_dequantized_matmuls(Graph& g);

}  // namespace gaf
