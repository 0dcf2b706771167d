// Halide 14's Sapphire Rapids target (needed for vdpbf16ps) lets LLVM use AVX512-FP16
// instructions, which CPUs with AVX512-BF16 but without FP16 (this AMD EPYC) do not have: a
// kernel using one dies with SIGILL. The guard compiles the kernel to assembly first and, when
// an FP16 instruction is there, gives the target without the feature. Includes Halide.h: for
// generator files only.
#pragma once

#include <string>
#include <vector>

#include <Halide.h>

namespace gaf {

// True when `assembly` (AT&T syntax, as Halide writes it) holds an AVX512-FP16 instruction:
// vmovw/vmovsh or a *ph / *sh arithmetic form (vcvtps2ph / vcvtph2ps are F16C: allowed).
bool assembly_has_fp16(const std::string& assembly);

// `wanted` when it runs on this CPU: without AVX512_SapphireRapids, or the CPU has AVX512-FP16,
// or `p` compiled for it uses no FP16 instruction; else `wanted` without the feature.
Halide::Target fp16_safe_target(Halide::Pipeline& p, const std::vector<Halide::Argument>& args,
                                const Halide::Target& wanted);

}  // namespace gaf
