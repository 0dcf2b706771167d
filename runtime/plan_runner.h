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

#include "runtime/aot_plan.h"
#include "runtime/npu_sim.h"
#include "runtime/tensor.h"

// The C types of a generated header's kernel table (NAME_kernels, ended by {0, 0}) and library
// description (NAME_library: the table and the hash of the kernels and argument shapes it was
// compiled for, AotPlan::kernel_table_hash). gaf compile writes this same text into the header.
#define GAF_AOT_KERNEL_TYPES       \
  typedef struct gaf_aot_kernel {  \
    const char* name;              \
    int (*argv)(void** args);      \
  } gaf_aot_kernel;                \
  typedef struct gaf_aot_library { \
    const gaf_aot_kernel* kernels; \
    const char* table_hash;        \
  } gaf_aot_library;
#ifndef GAF_AOT_KERNEL_DEFINED
#define GAF_AOT_KERNEL_DEFINED
extern "C" {
GAF_AOT_KERNEL_TYPES
}
#endif

namespace gaf {

// A kernel behind the one interface the runner calls: args[i] is the i-th halide_buffer_t*
// (group inputs, then outputs); returns 0 or a Halide error code (an AOT function's `_argv`
// entry), or throws a GafError with the message (a JIT-compiled group kernel,
// generators/aot_compiler.h: jit_kernel_table).
using PlanKernel = std::function<int(void** args)>;

// The types' text for a generated header (guarded like the definition above).
#define GAF_AOT_STRINGIFY2(x) #x
#define GAF_AOT_STRINGIFY(x) GAF_AOT_STRINGIFY2(x)
constexpr const char* kAotKernelTypes =
    "#ifndef GAF_AOT_KERNEL_DEFINED\n#define GAF_AOT_KERNEL_DEFINED\n" GAF_AOT_STRINGIFY(
        GAF_AOT_KERNEL_TYPES) "\n#endif\n";

class PlanRunner {
 public:
  // `library`: the generated header's NAME_library. Before anything runs, the plan file is
  // checked — its schema (AotPlan::from_json), its buffers and slots (AotPlan::validate), the
  // weights file's size — and its kernel table hash against the library's: a plan of another
  // model or sequence length, or one edited by hand, is refused. Every error is one GafError
  // line naming the file and the field.
  PlanRunner(const std::string& plan_path, const gaf_aot_library& library);
  // The same with kernels by function name and the hash of the table they were compiled for.
  PlanRunner(const std::string& plan_path, std::map<std::string, PlanKernel> kernels, const std::string& table_hash);
  // A plan built in this process (generators/executable.h: build_executable), validated the
  // same way, with its weights as tensors (shared, not copied; each with the plan's dtype and
  // shape) instead of a weights file.
  PlanRunner(const AotPlan& plan, std::map<std::string, PlanKernel> kernels, std::map<std::string, Tensor> weights);
  ~PlanRunner();

  // Checks every input (present, dtype, shape; unknown names refused) and runs the groups in
  // order. Outputs are copies out of the arena. A kernel's Halide runtime error (a buffer that
  // does not match what it was compiled for, say) is a GafError naming the group, not an abort.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // The same into `outputs`, kept by the caller across runs: an output already there with its
  // dtype and shape is written in place. A KV cache's present (AotPlan::kv_caches) is a window
  // of a block: the block of its past input when that is a window of a block of the same
  // capacity at its head (appended in place), else the block already in `outputs`, else a new
  // one (runtime/cache_window.h); feed it back as the next run's past.
  void run(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs);

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

  // Runs group `s` alone on `inputs` (its group inputs in order) into fresh tensors (its kernel
  // outputs, at the shapes of the last run's dims, or their upper bounds before any run).
  std::vector<Tensor> run_group(size_t s, const std::vector<const Tensor*>& inputs);
  // The most bytes of arena values live at once in any run so far (at the runs' shapes).
  size_t peak_bytes() const;
  // Called before each group's kernel while profiling (tensor-parallel ranks meet there).
  void set_group_hook(std::function<void(size_t group)> hook);

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
