// A ConvTranspose whose kernel equals its stride tiles its output with patches: each input pixel
// writes its own kernel-sized patch, no overlap (the 2x2/2 upsampling of U-Nets). That is a 1x1
// Conv to O * k * k channels (the taps as more output channels) followed by DepthToSpace (CRD,
// blocksize k):
//   ConvTranspose(X, W [C, O, k, k], B) -> DepthToSpace(Conv(X, W' [O*k*k, C, 1, 1]), k) + B [O, 1, 1]
// with W'[(o*k + ky)*k + kx, c] = W[c, o, ky, kx], so it runs as the exact 1x1 Conv tiles (X read in
// place, a GEMM) instead of each output gathering its tap (U-Net's 256-channel upsampling at
// 28 -> 56: 6.5 ms, 63 GFLOP/s). 2-D, static float32 X, constant W (and B), group 1, square
// kernel, no padding, dilation 1, no output padding; others stay ConvTranspose.
#pragma once

#include "fusion/ir/graph.h"

namespace gaf {

// Rewrites every such ConvTranspose in place (the Conv keeps its name); returns how many.
int patch_conv_transpose_as_conv(Graph& g);

}  // namespace gaf
