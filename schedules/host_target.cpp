#include "schedules/host_target.h"

#include "runtime/cpu_facts.h"

#include <algorithm>
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

// AVX512-FP16: Halide 14 takes AVX-VNNI + AVX512-BF16 for Sapphire Rapids, whose
// LLVM CPU includes AVX512-FP16; on CPUs with the first two but not FP16 its int8 kernels then
// die on an FP16 move (vmovw, SIGILL). The feature is kept only when FP16 is really there.
bool cpu_has_avx512_fp16() { return cpu_facts().avx512_fp16; }

bool cpu_has_avx512_bf16() { return cpu_facts().avx512_bf16; }
bool cpu_has_avx512_vnni() { return cpu_facts().avx512_vnni; }

Halide::Target with_dot_products(const Halide::Target& t) {
  return t.has_feature(Halide::Target::AVX512_Cannonlake) ? t.with_feature(Halide::Target::AVX512_SapphireRapids) : t;
}

Halide::Target dot_product_target(DType weights) {
  const bool has = weights == DType::BFloat16 ? cpu_has_avx512_bf16() : weights == DType::Int8 && cpu_has_avx512_vnni();
  return has ? with_dot_products(host_target()) : host_target();
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

int vector_registers(const Halide::Target& t) { return t.has_feature(Halide::Target::AVX512) ? 32 : 16; }

std::string host_machine_key() {
  const CpuFacts& cpu = cpu_facts();
  return host_target().to_string() + "|" + (cpu.name.empty() ? "unknown CPU" : cpu.name) + "|" +
         std::to_string(std::thread::hardware_concurrency()) + " cores";
}

HostScheduleParams host_params_for(const Halide::Target& t) {
  return default_host_params(float_lanes(t), vector_registers(t));
}

}  // namespace gaf
