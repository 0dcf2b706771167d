// The parameters of the host (CPU) schedules: one small set per group kind. Defaults come from
// the target's vector width and register file; these sets are what a tuner searches. No Halide
// here, so planners, tools and databases can include it cheaply.
#pragma once

#include <cstdint>

namespace gaf {

// MatMul + epilogue: each output tile of `vectors` SIMD vectors x `rows` rows is accumulated in
// registers over the whole k loop, then the epilogue runs on it and it is stored once.
struct MatMulParams {
  int vectors = 3;  // SIMD vectors per tile row (tile width = vectors * lanes)
  int rows = 8;     // output rows per tile
  // k iterations unrolled in the accumulator loop; 0 = by K: 4 from K >= 2048 (measured: 130 ->
  // 160 GFLOP/s per core at 128x3072x768, no gain or a loss at K = 768) and up to K = 512
  // (attention's short k loops: probs x V at seq 512 1.62 -> 1.45 ms, Q x K^T + Softmax 2.80 ->
  // 2.67 ms per layer).
  int k_unroll = 0;
  // Rows of A kept hot across all N panels: row tiles are grouped into blocks of about this
  // many bytes of A (rows x K x 4), blocks outermost, so a tall A (batch 8: M = 1024) is read
  // from memory once per block rather than once per N panel. Only when A is larger than four
  // blocks. 0: no blocking. Attention whole sizes its row blocks within a head by it too (a
  // block's probabilities are probs x V's A: rows x S x 4 bytes). 0 there: one block per head.
  int64_t a_block_bytes = 512 * 1024;
  // k steps per block when the accumulator is k-blocked: the accumulator of a whole N panel
  // (all rows of a short A) is computed at the panel, k split into blocks of this many steps
  // with the row tiles iterating inside each block, so a k_block x tile-width slice of B is
  // re-read from L1/L2 by every row tile instead of the whole K x width panel (measured with
  // 256: 128x3072x768 1.07x in gaf_bench with B unpacked; with B packed, 0.97-1.04x: neutral).
  // Only when K is 4 blocks or more (K = 768 in 3 blocks: 0.93-1.00x) and A is not row-blocked
  // (a tall A: 0.95x in a standalone Halide copy). 0: no k blocking.
  int k_block = 256;
};

// Row-wise groups (normalisations, softmax, elementwise chains): vectorised along the innermost
// axis, rows grouped into parallel tasks of about `task_elems` elements.
struct RowParams {
  int64_t task_elems = 16384;
};

struct HostScheduleParams {
  int lanes = 16;  // float32 lanes of one SIMD register
  MatMulParams matmul;
  RowParams rows;
};

// Defaults for a target with `lanes` float32 lanes and `vector_registers` SIMD registers: the
// largest vectors x rows accumulator block that leaves registers for the B vectors and the A
// broadcast (AVX-512: 3 x 8 of 32 registers; AVX2: 3 x 4 of 16).
HostScheduleParams default_host_params(int lanes, int vector_registers);

}  // namespace gaf
