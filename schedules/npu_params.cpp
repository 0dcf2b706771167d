#include "schedules/npu_params.h"

#include <cstdio>
#include <sstream>

#include "runtime/fnv_hash.h"
#include "runtime/npu_target.h"

namespace gaf {

std::string NpuScheduleParams::str() const {
  auto v = [](int64_t x) { return x > 0 ? std::to_string(x) : std::string("auto"); };
  return "m=" + v(m) + " n=" + v(n) + " k_l1=" + v(k_l1) + " rows=" + v(rows) + " chunk=" + v(chunk);
}

std::string npu_machine_key(const NpuTarget& t) {
  // Every number the schedules or the simulator read, in a fixed order (%.17g: exact doubles).
  std::ostringstream s;
  char d[64];
  auto num = [&](double x) {
    std::snprintf(d, sizeof d, "%.17g;", x);
    s << d;
  };
  s << t.ai_cores << ';';
  num(t.clock_ghz);
  num(t.gm_bandwidth_gbps);
  s << t.l1_bytes << ';' << t.ub_bytes << ';' << t.l0a_bytes << ';' << t.l0b_bytes << ';' << t.l0c_bytes << ';'
    << t.cube_m << ';' << t.cube_k << ';' << t.cube_n << ';';
  num(t.cube_fp32_macs_per_cycle);
  num(t.vector_bytes_per_cycle);
  s << t.ub_align_bytes << ';' << t.l0_align_bytes << ';' << t.gm_line_bytes << ';';
  num(t.launch_overhead_us);
  return t.name + " " + fnv1a_hex(s.str());
}

}  // namespace gaf
