// Tile sizes of the NPU tile model's schedules, chosen from the target's buffer capacities so
// each tile's working set fits half of each buffer (the other half holds the next tile: double
// buffering), and their application to a GM buffer's loop nest. Part of npu_schedule.cpp.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "runtime/npu_target.h"

#include <Halide.h>  // included only by the NPU schedule's two files
#include "schedules/npu_params.h"

namespace gaf {

struct NpuTileChoice {
  // Cube: output tile m x n in L0C, k blocks of k_l0 through L0A/L0B, panels of k_l1 in L1;
  // the epilogue takes the tile out of L0C through UB `ub_rows` rows at a time.
  int64_t m = 0, n = 0, k_l0 = 0, k_l1 = 0, ub_rows = 0;
  // Rows: `rows` rows of the second-innermost axis per tile; or, when a row is too long and
  // not reduced, `chunk` elements of the innermost axis.
  int64_t rows = 0, chunk = 0;
  std::string describe;
};

// A Func held in UB per tile (an epilogue, a staging copy, a row statistic): whether it spans
// the tile's innermost axis and its rows (a bias spans only the innermost axis, a row mean only
// the rows).
struct UbResident {
  bool spans_inner = true;
  bool spans_rows = true;
};

// Tiles fit half of each buffer and, where the buffer allows, are small enough that every AI
// core gets one. `shape` is the output buffer's (ONNX order, M x N last); `K` the reduction
// length; elements of `elem_bytes`. GafError naming `label` and the buffer when even the
// smallest tile does not fit. `p`'s overrides (gaf-tune's) replace the search; an override that
// does not fit, or a k panel that does not divide K, is a GafError naming it.
NpuTileChoice choose_cube_tile(const std::string& label, const Shape& shape, int64_t K,
                               const std::vector<UbResident>& ub, int64_t elem_bytes, const NpuTarget& t,
                               const NpuScheduleParams& p = {});
// `whole_rows`: the tile reduces along the innermost axis, so a row cannot be split.
NpuTileChoice choose_row_tile(const std::string& label, const Shape& shape, bool whole_rows,
                              const std::vector<UbResident>& ub, int64_t elem_bytes, const NpuTarget& t,
                              const NpuScheduleParams& p = {});

// Tiles `gm` (computed at root, tiles parallel) and returns the loop level of one tile, and for
// cube tiles the level of one UB block of `ub_rows` rows inside it.
struct NpuTileLevels {
  Halide::LoopLevel tile, ub;
};
NpuTileLevels apply_cube_tile(Halide::Func gm, const NpuTileChoice& c);
Halide::LoopLevel apply_row_tile(Halide::Func gm, const NpuTileChoice& c);

}  // namespace gaf
