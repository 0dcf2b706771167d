// The host target the JIT compiles for and the schedule defaults that follow from it. Includes
// Halide.h: for schedule and generator files only.
#pragma once

#include <Halide.h>

#include "runtime/tensor.h"
#include "schedules/host_params.h"

namespace gaf {

// The JIT target (host features, e.g. avx512_sapphirerapids here).
const Halide::Target& host_target();
// The target for kernels with dot products on packed weights of dtype `weights` (--precision
// bf16: BFloat16, int8: Int8): host_target() plus Halide's AVX512_SapphireRapids feature
// (vdpbf16ps, vpdpbusd) when the CPU has AVX-512 and the instruction (AVX512-BF16,
// AVX512-VNNI), else host_target(). Where the CPU lacks AVX512-FP16 the kernel must still be
// checked for FP16 instructions (generators/fp16_guard.h) before it runs.
Halide::Target dot_product_target(DType weights);
// `t` with the AVX512_SapphireRapids feature when it is an AVX-512 target (for an AOT library:
// whether the CPU that runs it has the instruction is checked there, AotPlan::cpu_features).
Halide::Target with_dot_products(const Halide::Target& t);
// AVX512-BF16, AVX512-VNNI and AVX512-FP16 (runtime/cpu_facts.h).
bool cpu_has_avx512_bf16();
bool cpu_has_avx512_vnni();
bool cpu_has_avx512_fp16();
// Float32 lanes and vector register count of a target (AVX-512: 16 and 32; AVX2: 8 and 16).
int float_lanes(const Halide::Target& t);
int vector_registers(const Halide::Target& t);
// default_host_params for `t`.
HostScheduleParams host_params_for(const Halide::Target& t);
// The machine a tuned schedule was measured on: the host target's features, the CPU model and
// the core count ("x86-64-linux-avx512...|AMD EPYC|2 cores"). Tuned entries for another key
// are not used.
std::string host_machine_key();

}  // namespace gaf
