// The host MatMul schedule: register-blocked output tiles with the accumulator computed per tile,
// so an epilogue defined on the output (bias, GELU, residual, scale) runs on the tile while it is
// in registers and each output element is stored once.
#pragma once

#include "fusion/ops/op_builder.h"
#include "schedules/host_params.h"
#include "schedules/matmul_tile.h"
#include "schedules/row_schedule.h"

namespace gaf {

// Schedules `out` (ONNX shape [..., M, N], computed at root) in tiles, the tile loops over N
// outermost so one panel of B serves every row tile, the outer loops parallel; `acc` (the
// MatMul's Accumulator stage, args (n, row)) is computed per tile with its k loop outside the
// register block. `b_panel` > 0: B is packed in panels of that many columns (the MatMul's
// `_b_panel`, generators/weight_packing.h); the tiles are then exactly one panel wide, aligned to
// the panels, so the packed reads are dense. Returns false, leaving both untouched, when `out`
// has rank < 2.
bool schedule_matmul_tiles(const TensorFunc& out, const Stage& acc, const HostScheduleParams& p,
                           int b_panel = 0);

// A MatMul whose output rows are normalised whole (attention's scores and their Softmax): `out`
// (the group output, ONNX shape [..., M, N] like `mm`, the MatMul's output) is computed in blocks
// of rows, parallel; each block's `mm` is computed first, in register tiles, so the raw scores
// never leave the cache. Returns `out`'s row loop, where per-row statistics go.
Placement schedule_matmul_rows(const TensorFunc& out, const TensorFunc& mm, const Stage& acc,
                               const HostScheduleParams& p);

}  // namespace gaf
