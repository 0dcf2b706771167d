// Patterns shared by several built-in rules: the decomposed forms PyTorch exports for GELU and
// the predicates that tie a decomposed op to the value it must read.
#pragma once

#include "fusion/planner/pattern.h"

namespace gaf::patterns {

// Node `node` reads the output of chain step `step`.
Pattern::Predicate reads_step(int step);
// Node `node` reads the same tensor as chain step `step`'s input `input`.
Pattern::Predicate reads_input_of_step(int step, int input = 0);
// Both operands are the same value (x * x).
Pattern::Predicate squares();
// Same "axes"/"keepdims" attributes as chain step `step`.
Pattern::Predicate same_reduction_as(int step);

// GELU, erf form: Div(x, sqrt 2) >> Erf >> Add(1) >> Mul(x, .) >> Mul(0.5), and the variant
// with the 0.5 applied first. `first_step` is the chain index of the Div inside the caller's
// pattern (the predicates refer to it).
Pattern gelu_erf_decomposed(int first_step);
// GELU, tanh form: Pow(x, 3) (or Mul(x, x) >> Mul(x, .)) >> Mul(0.044715) >> Add(x, .) >> Mul(sqrt(2/pi)) >> Tanh >>
// Add(1) >> Mul(x or 0.5x, .) [>> Mul(0.5)].
Pattern gelu_tanh_decomposed(int first_step);
// LayerNorm as PyTorch exports it (ReduceMean, Sub, Pow|Mul, ReduceMean, Add eps, Sqrt,
// Div|Reciprocal+Mul, optional gamma Mul and beta Add); `first_step` is the first ReduceMean's
// chain index (rules_normalization.cpp).
Pattern layernorm_decomposed(int first_step);
// RMSNorm decomposed (Pow|Mul square, ReduceMean, Add eps, Sqrt, Div|Reciprocal+Mul by x,
// optional gamma Mul); `first_step` is the square's chain index.
Pattern rmsnorm_decomposed(int first_step);
// Attention's mask on the scores, in the spellings exporters write: an additive mask
// (Add(scores, m): padding as -10000, a causal triangle of -inf or finfo.min) or a selection
// (Where(keep, scores, fill): GPT-2's bool buffer). The chain's scores must be a selected branch
// of the Where, never its condition. No mask at all is the caller's alternative without this step.
Pattern attention_mask();
// One to three masks in a row, in any order of the spellings above: a causal Where followed by a
// padding bias Add (Hugging Face's GPT-2 with an attention_mask), or a position bias then a mask.
// Each alternative is an exact chain, so the one that matches takes every mask between the scores
// and the Softmax.
Pattern attention_masks();
// Any activation an epilogue can carry, single-op or decomposed; `first_step` as above.
Pattern activation(int first_step);

}  // namespace gaf::patterns
