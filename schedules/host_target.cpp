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

namespace {

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// CPUID leaf 7 (structured extended features) for one subleaf; all zero off x86.
CpuidRegs cpuid_leaf7(unsigned subleaf) {
  CpuidRegs r;
#if defined(__x86_64__) || defined(__i386__)
  r.eax = 7;
  r.ecx = subleaf;
  __asm__("cpuid" : "+a"(r.eax), "=b"(r.ebx), "+c"(r.ecx), "=d"(r.edx));
#else
  (void)subleaf;
#endif
  return r;
}

}  // namespace

// CPUID leaf 7 EDX bit 23. Halide 14 takes AVX-VNNI + AVX512-BF16 for Sapphire Rapids, whose
// LLVM CPU includes AVX512-FP16; on CPUs with the first two but not FP16 its int8 kernels then
// die on an FP16 move (vmovw, SIGILL). The feature is kept only when FP16 is really there.
bool cpu_has_avx512_fp16() { return (cpuid_leaf7(0).edx >> 23) & 1u; }

// CPUID leaf 7 subleaf 1 EAX bit 5.
bool cpu_has_avx512_bf16() { return (cpuid_leaf7(1).eax >> 5) & 1u; }

Halide::Target bf16_dot_target() {
  if (!cpu_has_avx512_bf16() || !host_target().has_feature(Halide::Target::AVX512_Cannonlake)) return host_target();
  return host_target().with_feature(Halide::Target::AVX512_SapphireRapids);
}

const Halide::Target& host_target() {
  static const Halide::Target t = [] {
    Halide::Target jit = Halide::get_jit_target_from_environment();
    if (jit.has_feature(Halide::Target::AVX512_SapphireRapids) && !cpu_has_avx512_fp16())
      jit = jit.without_feature(Halide::Target::AVX512_SapphireRapids);
    return jit;
  }();
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
