// The NPU tile model's schedule of one group. Every group output is computed tile by tile: in
// UB (vector work; a MatMul's epilogue on its way out of L0C) and copied to its GM buffer; the
// group's inputs come in through staging copies (GM -> UB for vector work, GM -> L1 -> L0A/L0B
// for the cube); MatMuls are tiled in cube-shaped blocks (output tile in L0C, k blocks through
// L0A/L0B, k panels through L1). Tile sizes are chosen so each tile's working set fits half of
// each buffer (double buffering); a group that cannot fit is refused with an error naming the
// group and the buffer. A value several outputs need is materialised in GM (its own tiles)
// rather than recomputed. Layout and gather ops stage the box of their input a tile needs.
//
// The staging copies and GM buffers are traced; the simulator (runtime/npu_sim.h) counts what
// they move using the returned stage map.
#pragma once

#include <string>
#include <vector>

#include "runtime/npu_sim.h"
#include "runtime/npu_target.h"
#include "schedules/npu_params.h"
#include "schedules/fused_schedule.h"

namespace gaf {

struct NpuGroupInput {
  Halide::ImageParam param;  // undefined when the group never reads the input
  Shape shape;
};

struct NpuSchedule {
  std::vector<Halide::Func> gm_outputs;  // what the pipeline realises: one per group output
  NpuStageMap stages;                    // for the simulator
  std::vector<std::string> tiles;        // one line per tiled GM buffer, for reports and logs
};

// `label` names the group in errors ("group g7 (matmul_epilogue)"). Throws GafError when a tile
// cannot fit a buffer, or when an override in `params` (gaf-tune's) is illegal.
NpuSchedule apply_npu_schedule(const std::string& label, const std::vector<TensorFunc>& outputs,
                               const std::vector<MemberFuncs>& members, const std::vector<NpuGroupInput>& inputs,
                               const NpuTarget& target, const NpuScheduleParams& params = {});

}  // namespace gaf
