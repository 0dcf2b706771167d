// The register tile of the host MatMul schedule, as plain arithmetic (no Halide), so the weight
// packing at load (generators/weight_packing.h) picks the same panel width the schedule uses.
#pragma once

#include <cstdint>

#include "schedules/host_params.h"

namespace gaf {

// The tile actually used for an output of `N` columns and `M` rows: at most p.vectors vectors
// wide (preferring a width that divides N, so no column is computed twice) and p.rows tall.
struct MatMulTile {
  int width = 0, rows = 0, lanes = 0;  // width is a multiple of lanes unless N < lanes
};
MatMulTile choose_matmul_tile(int64_t M, int64_t N, const HostScheduleParams& p);

}  // namespace gaf
