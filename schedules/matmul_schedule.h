// The host MatMul schedule: register-blocked output tiles with the accumulator computed per tile,
// so an epilogue defined on the output (bias, GELU, residual, scale) runs on the tile while it is
// in registers and each output element is stored once.
#pragma once

#include <optional>
#include <vector>

#include "fusion/ops/op_builder.h"
#include "schedules/host_params.h"
#include "schedules/matmul_tile.h"
#include "schedules/row_schedule.h"

namespace gaf {

// Operands a MatMul reads through a layout prologue (fusion/planner/layout_chains.h), computed
// into dense buffers per block instead of read through the layout at every FMA: `b` when its
// source moves the innermost axis (BERT's K^T: gathers otherwise), `a` when its rows are far
// apart in the source (Q's rows are rows of the wide QKV output, 9 KB apart: staged per row
// block, scores + Softmax 0.19 -> 0.16 ms per layer). Null: read in place.
struct StagedOperands {
  const Stage* a = nullptr;  // the MatMul's a_op stage, args (k, row)
  const Stage* b = nullptr;  // its b_op stage, args (n, k, batch)
  // A converted for a dot-product B (bf16 pairs: a_op, A rounded to bf16; int8 quads: a_scale,
  // each row's scale, then a_op, A quantized to uint8), args (k, row) / (row). Computed once at
  // root rather than converted in the register block at every k step.
  std::vector<const Stage*> a_converted;
};

// Schedules `out` (ONNX shape [..., M, N], computed at root) in tiles, the tile loops over N
// outermost so one panel of B serves every row tile, the outer loops parallel; `acc` (the
// MatMul's Accumulator stage, args (n, row)) is computed per tile with its k loop outside the
// register block. `b_panel` > 0: B is packed in panels of that many columns (the MatMul's
// `_b_panel`, generators/weight_packing.h); the tiles are then exactly one panel wide, aligned to
// the panels, so the packed reads are dense. Returns false, leaving both untouched, when `out`
// has rank < 2. `staged.b`: computed densely per parallel panel before its tiles read it
// (`staged.a` is not: A would be copied once per panel). `layout_run` > 0: `out` is the MatMul's output
// through a layout epilogue (MemberFuncs::layout_run); the tiles are chosen for that many columns
// and must divide it and `out`'s columns exactly (false, untouched, if they cannot).
bool schedule_matmul_tiles(const TensorFunc& out, const Stage& acc, const HostScheduleParams& p, int b_panel = 0,
                           StagedOperands staged = {}, int layout_run = 0);

// A gated MLP (rule gated_mlp): `out` = act(x W_gate) * (x W_up), ONNX shape [..., M, N], in
// register tiles as schedule_matmul_tiles; per parallel panel the gate's accumulator is computed
// for the whole panel, then the up projection's, then the panel's gated product: neither
// projection is stored, and only one panel of B is in cache at a time (both per register tile
// measured 15% slower at Llama's 128 x 768 x 2048: two B panels of 196 KB each, one L2). bf16 and
// int8 accumulators stay per tile. Both B are packed alike (`b_panel`) or not at all. False,
// nothing scheduled, when `out` has rank < 2.
bool schedule_gated_tiles(const TensorFunc& out, const Stage& gate_acc, StagedOperands gate_staged, const Stage& up_acc,
                          StagedOperands up_staged, const HostScheduleParams& p, int b_panel);

// A MatMul whose output rows are normalised whole (attention's scores and their Softmax): `out`
// (the group output, ONNX shape [..., M, N] like `mm`, the MatMul's output) is computed in blocks
// of rows, parallel; each block's `mm` is computed first, in register tiles, so the raw scores
// never leave the cache. Returns `out`'s row loop, where per-row statistics go. `staged` operands
// are computed once per parallel row block.
Placement schedule_matmul_rows(const TensorFunc& out, const TensorFunc& mm, const Stage& acc,
                               const HostScheduleParams& p, StagedOperands staged = {});

// Attention whole (rule `attention`): probs x V (`pv_acc`) tiled on `out` — its output, or
// through a layout epilogue `layout_run` wide — with the row tiles in blocks inside each head's
// parallel iteration; per block, `probs` (the Softmax output, [..., M, S]) is computed first,
// with the scores MatMul `mm` in register tiles inside it, so neither scores nor
// probabilities leave the cache. `mm_staged.b` (K^T) is staged once per head, `mm_staged.a` (Q)
// per block. Decoding (a static M of at most 4 query rows per head): the scores are one dot
// product per key instead, reading K in place along its rows (no K^T copy). Returns probs' row
// loop, where the Softmax statistics go; nullopt (nothing scheduled) when the tiles cannot be
// carried by `out`.
std::optional<Placement> schedule_attention(const TensorFunc& out, const Stage& pv_acc, int layout_run,
                                            StagedOperands pv_staged, const TensorFunc& probs, const TensorFunc& mm,
                                            const Stage& mm_acc, StagedOperands mm_staged, const HostScheduleParams& p);

}  // namespace gaf
