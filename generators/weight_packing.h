// Packing MatMul weights at load: a constant B [K, N] read by one tiled MatMul is rewritten in
// place of the original as panels [N / w, K, w] (w = the schedule's tile width for that MatMul),
// and the MatMul gets `_b_panel` = w. A row tile then streams one contiguous K x w panel instead
// of w columns strided by N (docs/ARCHITECTURE.md, "Packed MatMul weights"). No Halide here.
#pragma once

#include "fusion/ir/graph.h"
#include "generators/precision.h"
#include "schedules/host_params.h"

namespace gaf {

// Packs every eligible MatMul weight of `g`: B a float32 constant of rank 2 whose only reader is
// this MatMul (not a graph output), A of rank >= 2, and N a multiple of the tile width p gives
// (itself a multiple of the vector width, and smaller than N). The packed tensor replaces the
// original value (same name, new type); the original's storage is freed unless another Graph
// copy still holds it. Returns the number of weights packed. Run it after planning (the plan's
// signatures keep the logical shapes) and before compiling kernels with the same `p`.
// Precision::Bf16: the panels are bfloat16 (round to nearest even) with K in adjacent pairs,
// [N / w, K / 2, w, 2] — the two k of a pair side by side, which is what one vdpbf16ps lane
// multiplies — for weights whose K is even; the others stay float32.
// Precision::Int8: int8 panels with K in adjacent quads, [N / w, K / 4 + 2, w, 4] — what one
// vpdpbusd lane multiplies — for weights whose K is a multiple of 4; the others stay float32.
// Each column n is quantized on its own: scale_n = max_k |B[k][n]| / 127 (1 for a zero column),
// q = round(B / scale_n) in [-127, 127]. The panel's two rows past K / 4 carry the column's
// dequantization facts, as a block of quants carries its scale: row K / 4 the four bytes of
// scale_n (float32), row K / 4 + 1 those of sum_k q[k][n] (int32, for A's zero point of 128).
// Padded columns are all zeros (scale 0: they dequantize to 0).
// `model_int8`: MatMuls whose weights the model quantized (`_int8_weights`,
// fusion/frontend/dequantized_matmul.h) are packed as int8 whatever `precision` is (the engine
// passes whether the CPU has int8 dot products).
int pack_matmul_weights(Graph& g, const HostScheduleParams& p, Precision precision = Precision::Fp32,
                        bool model_int8 = false);

// The panel width pack_matmul_weights gave MatMul `n`'s B (its `_b_panel`), 0 when B is not packed.
int64_t packed_panel_width(const Node& n);

// The dtype of the dot-product weights (BFloat16 pairs, Int8 quads) a MatMul among `nodes` of `g`
// reads after packing, whose kernel wants that dot-product instruction; Float32 when none does.
DType packed_dot_weights(const Graph& g, const std::vector<int>& nodes);

}  // namespace gaf
