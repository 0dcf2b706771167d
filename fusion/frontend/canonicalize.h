// Equivalent spellings rewritten to one form after folding, so that kernels and rules see one
// spelling whatever the exporter wrote. Today: Pow(x, 2) with a constant exponent becomes
// Mul(x, x) — a general pow per element costs a log and an exp, and LayerNorm's variance is
// written with it (PyTorch's decomposed LayerNorm, the built-in BERT); Div(1, y) becomes
// Reciprocal(y) (torch.rsqrt's export, RMSNorm); a Cast to the dtype its input has is bypassed
// (its consumers read the input; dead-node removal then drops it); Gemm(A, B[, C]) with a constant B,
// A not transposed and alpha = beta = 1 becomes MatMul(A, B or B^T) [+ Add C] (nn.Linear's export);
// MatMul(W, x^T) with a constant W becomes (x W^T)^T (a K^T computed directly as W_k x^T); a
// two-operand Einsum becomes Transpose + MatMul (einsum_rewrite.h); a ConvTranspose whose patches
// tile its output becomes a 1x1 Conv + DepthToSpace (conv_transpose_rewrite.h).
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// Returns the number of nodes rewritten. Node names stay (explain and reports still find them).
int canonicalize(Graph& g);

}  // namespace gaf
