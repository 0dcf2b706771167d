// Helpers of the low-precision kernel tests (bf16, int8): BERT-base's FFN up-projection as a
// one-group model, this CPU's /proc/cpuinfo flags, and a planned group's assembly as the JIT
// compiles it for a target (FP16-guarded, generators/fp16_guard.h).
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/engine.h"
#include "fusion/ir/builder.h"
#include "generators/fp16_guard.h"
#include "generators/group_pipeline.h"
#include "planner_test_util.h"
#include "schedules/host_target.h"

namespace gaf::testing {

// x [1, 128, 768] @ W [768, 3072] + b, GELU (erf form): BERT-base's FFN up-projection.
inline Graph ffn_up() {
  GraphBuilder b("ffn_up");
  ValueRef x = b.input("x", DType::Float32, {1, 128, 768});
  ValueRef w = b.weight("W", random_uniform({768, 3072}, 1, 0.05f));
  ValueRef bias = b.weight("b", random_uniform({3072}, 2, 0.1f));
  ValueRef y = b.add(b.matmul(x, w), bias);
  ValueRef g = b.mul(b.mul(y, b.scalar(0.5f)), b.add(b.erf(b.div(y, b.scalar(std::sqrt(2.0f)))), b.scalar(1.0f)));
  b.output(g, "y");
  return prepared(b.finish());
}

inline bool cpuinfo_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// Group `group` of `engine`'s plan compiled for `wanted` (then the FP16 guard) to assembly in
// GAF_TEST_SCRATCH/NAME.s; returns its text and sets `*compiled` to the target it was compiled for.
inline std::string group_assembly(Engine& engine, size_t group, const Halide::Target& wanted, const std::string& name,
                                  Halide::Target* compiled) {
  KernelOptions k;
  k.params = host_params_for(host_target());
  GroupPipeline p(engine.kernel_graph(), engine.plan().groups.at(group), k, wanted);
  *compiled = fp16_safe_target(p.pipeline(), p.arguments(), wanted);
  const std::string file = std::string(GAF_TEST_SCRATCH) + "/" + name + ".s";
  std::filesystem::create_directories(GAF_TEST_SCRATCH);
  p.pipeline().compile_to_assembly(file, p.arguments(), name, *compiled);
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace gaf::testing
