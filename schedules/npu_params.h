// The tunable parameters of the NPU tile model's schedules (npu_schedule.h), one set per group:
// overrides of the tile sizes choose_cube_tile / choose_row_tile would pick. 0 keeps the
// schedule's own choice. An override must still be legal (its tile fits half of each buffer, k
// panels divide K); an illegal one is a GafError naming the group and the parameter, never a
// silent fallback, so gaf-tune rejects the candidate. No Halide here.
#pragma once

#include <cstdint>
#include <string>

namespace gaf {

struct NpuTarget;

struct NpuScheduleParams {
  // Cube groups: the MatMul output tile m x n in L0C (clamped to the output's extent) and the k
  // panel through L1 (a divisor of K; the L0A/L0B block is then the largest divisor of it that fits).
  int64_t m = 0, n = 0, k_l1 = 0;
  // Vector groups: rows per tile (clamped to the rows there are); or, when a row is too long for
  // UB and is not reduced, elements per chunk of the innermost axis.
  int64_t rows = 0, chunk = 0;

  bool is_default() const { return m == 0 && n == 0 && k_l1 == 0 && rows == 0 && chunk == 0; }
  bool operator==(const NpuScheduleParams& o) const {
    return m == o.m && n == o.n && k_l1 == o.k_l1 && rows == o.rows && chunk == o.chunk;
  }
  // "m=64 n=128 k_l1=256 rows=auto chunk=auto"
  std::string str() const;
};

// The schedule database's "machine" of npu-tile entries: the target's name and a hash of all its
// numbers, so an entry tuned for one target description is not applied to another (an edited
// file with the same name included).
std::string npu_machine_key(const NpuTarget& t);

}  // namespace gaf
