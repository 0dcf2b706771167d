// The host schedules of a Conv (fusion/ops/conv.cpp). A static 2-D Conv is built in its flat
// form (Stage::flat: output rows end to end at a pitch, the input split into stride phases) and
// runs as a GEMM: per block of output rows and tile of channels, the accumulator in register tiles
// of whole vectors along the flat positions x several channels, the reduction over (input
// channel, kernel window) outside the register block, so each loaded operand vector serves every
// channel of the tile and each broadcast weight every vector; the output (or its epilogue: bias,
// ReLU, residual Add) then reads the block's accumulator row by row. Other Convs (1-D, 3-D,
// dynamic shapes) run in direct 2-D tiles of the output, the epilogue on the tile in registers.
#pragma once

#include "fusion/ops/op_builder.h"
#include "schedules/host_params.h"

namespace gaf {

// Schedules `out` (ONNX shape [N, O, spatial...], the Conv's output or an epilogue of the same
// shape) at root in such tiles, the tile loops over channels, rows and images parallel; `acc`
// (the Conv's Accumulator stage: flat, args (p, o, n); else (x, spatial..., o, n); reduction
// (c, k...)) per tile or per block. `input` (the Conv's Operand stage: the flat phases, args
// (q, phase, c, n); else X padded, args (x, spatial..., c, n)), when given, is computed once at
// root, so the tiles read dense rows. Returns false, leaving all untouched, when `out` has rank
// < 3, dynamic extents, or a shape that is not the Conv's output's (`acc_shape`).
bool schedule_conv_tiles(const TensorFunc& out, const Stage& acc, const Shape& acc_shape, const Stage* input,
                         const HostScheduleParams& p);

}  // namespace gaf
