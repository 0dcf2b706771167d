// Ahead-of-time compilation of a FusionPlan (gaf compile): each distinct group signature is
// compiled once from the same GroupPipeline the JIT uses (group_pipeline.h) to an object without
// the Halide runtime; the runtime is emitted once; all go into one static library. Beside it: a C
// header (kernel prototypes and a name -> function table), the plan file (JSON, schema
// "graph-autofusion/aot-plan/1", docs/USER_GUIDE.md) and the weights file. Outputs are written to
// a temporary folder and renamed into place only when everything succeeded. No Halide here.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/kv_cache.h"
#include "generators/precision.h"
#include "runtime/npu_target.h"
#include "runtime/plan_runner.h"
#include "schedules/schedule_db.h"

namespace gaf {

struct AotOptions {
  std::string name;     // library name, a C identifier: NAME.a, NAME.h, NAME_k<i> functions
  std::string out_dir;  // created if missing
  std::string model;    // recorded in the plan ("builtin:bert-base", a path)
  // Empty: the host JIT target. Else Halide target strings, comma-separated for a library that
  // dispatches at run time (first preferred, last the fallback); "host" = the JIT target.
  std::string halide_target;
  const ScheduleDb* schedules = nullptr;
  // The NPU tile model (gaf compile --target npu-tile): kernels with the NPU schedules for this
  // target, compiled for one host target with their staging copies traced; the plan file then
  // carries the target and each kernel's stage map, and the plan runtime counts them.
  const NpuTarget* npu = nullptr;
  // KV caches the plan runner keeps in blocks (bind_kv_caches has marked their values in the
  // graph: their kernels take window strides), recorded in the plan.
  std::map<std::string, KvCacheBinding> kv_caches;
  // MatMul weights packed in this precision (one target only); bf16 / int8 kernels of an AVX-512
  // target are compiled with their dot products, and the plan then names the CPU features its
  // runner requires (AotPlan::cpu_features). Int8 also keeps a model's own int8 weights int8.
  Precision precision = Precision::Fp32;
};

struct AotResult {
  int groups = 0;
  int kernels = 0;  // distinct signatures compiled
  int tuned_kernels = 0;
  std::string target;  // the Halide target string compiled for
  int64_t arena_bytes = 0, lower_bound = 0, weight_bytes = 0;
  double seconds = 0;
  std::vector<std::string> files;  // written, final paths
  // With dynamic dims: kernels Halide could not lower with the host schedule, on the reference
  // schedule instead ("g<id> (<size class>): <reason>").
  std::vector<std::string> schedule_fallbacks;
};

// `g` must be the graph the plan was made on (after the planner's rewrites).
AotResult compile_plan_aot(const Graph& g, const FusionPlan& plan, const AotOptions& opts);

// The same kernels JIT-compiled for this machine, named as compile_plan_aot names them for
// `name` (NAME_k0, ...), behind the plan runner's interface (runtime/plan_runner.h: PlanKernel):
// args[i] is a halide_buffer_t*, group inputs then computed outputs; the kernels are the JIT
// executor's (generators/group_kernel.h: compile_group_kernel, called through run_argv). With the hash of the table (as the generated header's), so a plan
// file gaf compile wrote runs with either kernel kind.
struct JitKernelTable {
  std::map<std::string, PlanKernel> kernels;
  std::string table_hash;
};
JitKernelTable jit_kernel_table(const Graph& g, const FusionPlan& plan, const std::string& name,
                                const ScheduleDb* schedules = nullptr);

// Throws GafError unless `name` is a C identifier.
void check_library_name(const std::string& name);

}  // namespace gaf
