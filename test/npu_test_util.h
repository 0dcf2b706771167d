// What the NPU tests share: a small core, so small tensors need several tiles.
#pragma once

#include "runtime/npu_target.h"

namespace gaf::testing {

// L0C 8 KB, L0A/L0B 2 KB, L1 8 KB, UB 16 KB, 2 cores.
inline NpuTarget tiny_npu_target() {
  return parse_npu_target(R"({
    "name": "tiny", "ai_cores": 2, "clock_ghz": 1.0, "gm_bandwidth_gbps": 100,
    "l1_bytes": 8192, "ub_bytes": 16384, "l0a_bytes": 2048, "l0b_bytes": 2048, "l0c_bytes": 8192,
    "cube_m": 16, "cube_k": 16, "cube_n": 16, "cube_fp32_macs_per_cycle": 2048,
    "vector_bytes_per_cycle": 256, "ub_align_bytes": 32, "l0_align_bytes": 512, "gm_line_bytes": 512,
    "launch_overhead_us": 3})",
                          "tiny test target");
}

}  // namespace gaf::testing
