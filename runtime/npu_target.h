// The NPU tile model's machine description: an Ascend-like AI core (GM, L1, UB, L0A/L0B/L0C,
// a cube unit, a vector unit) read from a JSON file (schedules/targets/*.json; every value names
// its source). Plain data: the NPU schedules choose tiles from it and check capacities, the
// simulator (npu_sim.h) turns counted bytes and work into modeled time. It lives in runtime
// because the simulator does; no Halide, no fusion headers.
#pragma once

#include <cstdint>
#include <string>

namespace gaf {

struct NpuTarget {
  std::string name;
  std::string file;  // where it was read from ("built-in" for the default)
  int ai_cores = 0;
  double clock_ghz = 0;
  double gm_bandwidth_gbps = 0;  // GB/s, all cores together
  int64_t l1_bytes = 0, ub_bytes = 0, l0a_bytes = 0, l0b_bytes = 0, l0c_bytes = 0;
  int cube_m = 16, cube_k = 16, cube_n = 16;
  double cube_fp32_macs_per_cycle = 0;  // per core
  double vector_bytes_per_cycle = 0;    // per core
  int64_t ub_align_bytes = 32, l0_align_bytes = 512, gm_line_bytes = 512;
  double launch_overhead_us = 0;
  // The interconnect between NPUs for collectives (optional in the file; 0: not described):
  // one link per rank in a ring, its bandwidth and the latency of one ring step.
  double link_bandwidth_gbps = 0;
  double link_latency_us = 0;
};

// Reads and checks a target file; GafError naming the file and the field on any problem.
NpuTarget load_npu_target(const std::string& path);
// The same from JSON text (`origin` names it in errors).
NpuTarget parse_npu_target(const std::string& json_text, const std::string& origin);
// The target as JSON text parse_npu_target reads back (AOT plan files carry their target).
std::string npu_target_json(const NpuTarget& t);
// schedules/targets/ascend910_like.json, compiled in.
const NpuTarget& default_npu_target();

// `path` if given, else the default.
inline NpuTarget npu_target_or_default(const std::string& path) {
  return path.empty() ? default_npu_target() : load_npu_target(path);
}

}  // namespace gaf
