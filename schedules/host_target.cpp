#include "schedules/host_target.h"

#include <algorithm>
#include <fstream>
#include <thread>

namespace gaf {

HostScheduleParams default_host_params(int lanes, int vector_registers) {
  HostScheduleParams p;
  p.lanes = lanes;
  // Per k step the kernel holds vectors*rows accumulators, `vectors` B vectors and one A
  // broadcast; three vectors wide keeps the B loads few per FMA.
  p.matmul.vectors = 3;
  p.matmul.rows = std::max(1, (vector_registers - p.matmul.vectors - 1) / p.matmul.vectors);
  p.matmul.rows = std::min(p.matmul.rows, 8);
  return p;
}

const Halide::Target& host_target() {
  static const Halide::Target t = Halide::get_jit_target_from_environment();
  return t;
}

int float_lanes(const Halide::Target& t) { return std::max(1, t.natural_vector_size(Halide::Float(32))); }

int vector_registers(const Halide::Target& t) {
  return t.has_feature(Halide::Target::AVX512) ? 32 : 16;
}

std::string host_machine_key() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return host_target().to_string() + "|" + model + "|" + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

HostScheduleParams host_params_for(const Halide::Target& t) {
  return default_host_params(float_lanes(t), vector_registers(t));
}

}  // namespace gaf
