// What this CPU is, detected once: its name, cores, cache sizes per level and the vector and
// dot-product features the kernels choose between (AVX2, AVX-512, bf16/fp16/int8 dot products,
// AMX). `gaf info` prints them; host_target.cpp reads its feature checks here. No Halide here.
#pragma once

#include <cstdint>
#include <string>

namespace gaf {

struct CpuFacts {
  std::string name;    // /proc/cpuinfo "model name"
  std::string vendor;  // CPUID vendor ("AuthenticAMD", "GenuineIntel")
  int family = 0, model = 0;
  int logical_cpus = 0;  // this process may run on
  // Data cache bytes per instance (0: unknown); l2 is per core on every x86 this project meets.
  int64_t l1d = 0, l2 = 0, l3 = 0;
  bool avx2 = false, fma = false;
  bool avx512f = false;
  bool avx512_bf16 = false;                    // vdpbf16ps: bf16 pairs into fp32
  bool avx512_fp16 = false;                    // half-precision arithmetic (Sapphire Rapids on)
  bool avx512_vnni = false, avx_vnni = false;  // int8 dot products (vpdpbusd)
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool amx_usable = false;  // the OS lets this process use the tile registers (XTILEDATA permitted)

  // "avx2 fma avx512f avx512_bf16 ..." (the ones present).
  std::string feature_list() const;
  // Several lines, "  name: value", for gaf info.
  std::string report() const;
};

// Detected on first use (CPUID, /sys/devices/system/cpu/cpu0/cache — CPUID's cache leaves where a VM
// has no such folder — and /proc/cpuinfo).
const CpuFacts& cpu_facts();

}  // namespace gaf
