// Runs a plan compiled by `gaf compile` (generators/aot_compiler.h) without the Halide compiler:
// reads NAME.plan.json and NAME.weights, checks the inputs against the plan's shapes, allocates
// one arena of the plan's size and calls each group's kernel through a table (the one the
// generated NAME.h defines: NAME_kernels). Needs only HalideRuntime.h (halide_buffer_t) and the
// Halide runtime inside NAME.a.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/npu_sim.h"
#include "runtime/tensor.h"

#ifndef GAF_AOT_KERNEL_DEFINED
#define GAF_AOT_KERNEL_DEFINED
extern "C" {
typedef struct gaf_aot_kernel {
  const char* name;
  int (*argv)(void** args);  // Halide's argv entry: args[i] is the i-th halide_buffer_t*
} gaf_aot_kernel;
}
#endif

namespace gaf {

// A kernel behind the one interface the runner calls: args[i] is the i-th halide_buffer_t*
// (group inputs, then outputs); returns 0 or a Halide error code. An AOT function's `_argv`
// entry, or a JIT-compiled pipeline (generators/aot_compiler.h: jit_kernel_table).
using PlanKernel = std::function<int(void** args)>;

class PlanRunner {
 public:
  // `kernels`: a table ended by {0, 0}. Every kernel the plan names must be in it. Errors
  // (missing or corrupt file, bad field, missing kernel) are GafError naming the file and field.
  PlanRunner(const std::string& plan_path, const gaf_aot_kernel* kernels);
  // The same with kernels by function name.
  PlanRunner(const std::string& plan_path, std::map<std::string, PlanKernel> kernels);
  ~PlanRunner();

  // Checks every input (present, dtype, shape; unknown names refused) and runs the groups in
  // order. Outputs are copies out of the arena.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  struct TensorSpec {
    std::string name;
    DType dtype;
    Shape shape;
  };
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  int64_t arena_bytes() const;
  int64_t arena_lower_bound() const;
  int64_t weight_bytes() const;
  size_t group_count() const;
  std::string group_label(size_t s) const;  // "g3 normalization LayerNorm (name_k2)"

  // Time per group of each later run (ms), when on.
  void set_profiling(bool on);
  const std::vector<double>& group_ms() const;

  // A plan compiled with --target npu-tile: its kernels' staging copies are counted by the NPU
  // simulator (runtime/npu_sim.h) on every run; per group, the counts of the last run.
  bool npu() const;
  const NpuTarget& npu_target() const;
  const std::vector<NpuCounts>& npu_counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gaf
