// The host schedule of a direct convolution (fusion/ops/conv.cpp): register tiles of the output,
// a few vectors along the innermost spatial axis x several output channels, the accumulator
// computed per tile with the reduction over (input channel, kernel window) outside the register
// block, so each loaded input vector serves every output channel of the tile and each broadcast
// weight every vector. An epilogue defined on the output (bias, ReLU, residual Add) runs on the
// tile while it is in registers, as for MatMul (matmul_schedule.h).
#pragma once

#include "fusion/ops/op_builder.h"
#include "schedules/host_params.h"

namespace gaf {

// Schedules `out` (ONNX shape [N, O, spatial...], the Conv's output or an epilogue of the same
// shape) at root in such tiles, the tile loops over channels, rows and images parallel; `acc`
// (the Conv's Accumulator stage, args (x, spatial..., o, n), reduction (c, k...)) per tile.
// `input` (the Conv's Operand stage: X padded, args (x, spatial..., c, n)), when given, is
// computed once at root, so the tiles read dense rows. Returns false, leaving all untouched, when
// `out` has rank < 3, dynamic extents, or a shape that is not acc's.
bool schedule_conv_tiles(const TensorFunc& out, const Stage& acc, const Shape& acc_shape, const Stage* input,
                         const HostScheduleParams& p);

}  // namespace gaf
