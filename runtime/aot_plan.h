// The AOT plan file (schema graph-autofusion/aot-plan/1, docs/USER_GUIDE.md) as one typed value:
// the writer (generators/aot_compiler.cpp) fills it and calls to_json, the reader (PlanRunner)
// calls from_json and validate. Also the kernel table hash both sides compute from it. No Halide.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/npu_sim.h"
#include "runtime/npu_target.h"
#include "runtime/sym_expr.h"
#include "runtime/tensor.h"

namespace gaf {

struct AotTensor {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;  // with dynamic dims: the largest over their ranges (the arena holds that)
  // With dynamic dims: each dim as an expression in them ("seq", "12*seq"); empty: static.
  std::vector<SymExpr> sym_shape;
  int64_t nbytes() const { return shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype)); }
  Shape shape_at(const SymBindings& dims) const { return sym_shape.empty() ? shape : eval_shape(sym_shape, dims); }
};

// A dynamic dim of the compiled model: every run gives it a value in the range.
struct AotDim {
  std::string name;
  SymbolRange range;
};

// A value in the arena: byte offset, size, and the first and last group that touch it.
struct AotBuffer : AotTensor {
  int64_t offset = 0, bytes = 0;
  int first = 0, last = 0;
};

// A constant in the weights file: byte offset and size.
struct AotWeight : AotTensor {
  int64_t offset = 0, bytes = 0;
};

struct AotKernel {
  std::string function;  // empty: the group computes nothing (zero-sized outputs)
  std::string signature;
  bool tuned = false;
  int first_group = 0;
  bool has_npu = false;  // npu-tile plans: what the simulator counts, and the tiles
  NpuStageMap npu_stages;
  std::vector<std::string> npu_tiles;
};

// Indices a member reads from outside the group (Gather's), checked by the runner before the
// kernel runs (runtime/index_range.h: kernels clamp): `indices` index `data` along `axis`.
struct AotIndexCheck {
  std::string node, op;  // named in the error
  std::string indices, data;
  int axis = 0;
};

struct AotGroup {
  int id = 0;
  std::string kind, label;
  std::string kernel;                        // empty: nothing to compute
  std::vector<std::string> inputs, outputs;  // FusionGroup order
  std::vector<std::string> kernel_outputs;   // the non-empty outputs: the kernel's output arguments
  // The kernel per size class (AotPlan::classes order; `kernel` is the first); a static plan read
  // from JSON has {kernel}.
  std::vector<std::string> class_kernels;
  std::vector<AotIndexCheck> index_checks;  // "index_checks", absent when empty
};

// A KV cache the runner keeps in a block (runtime/cache_window.h; generators/kv_cache.h has the
// why): `present` (a graph output) is computed into a window of a block of `capacity` rows along
// `axis`; `past` (a graph input, or empty) is the present of the run before; `append`: present's
// group writes only the rows after past's. Its kernels take the windows' strides at run time.
struct AotKvCache {
  std::string present, past;
  int axis = 0;
  int64_t capacity = 0;
  bool append = false;
};

struct AotPlan {
  static constexpr const char* kSchema = "graph-autofusion/aot-plan/1";
  std::string name, model, halide_target;
  bool npu = false;  // "target": "npu-tile" (else "host")
  NpuTarget npu_target;
  std::string library, header, weights_file;
  int64_t weights_bytes = 0;
  std::vector<AotTensor> inputs, outputs;
  // Dynamic dims (their order is the kernels' scalar arguments' order, after the inputs) and the
  // size classes each group has a kernel for; both empty for a static plan.
  std::vector<AotDim> dims;
  std::vector<SymbolRanges> classes;
  std::vector<AotKernel> kernels;
  int64_t arena_bytes = 0, arena_lower_bound = 0, arena_alignment = 64;
  std::vector<AotBuffer> buffers;
  std::vector<AotWeight> weights;
  std::vector<AotGroup> groups;
  std::vector<AotKvCache> kv_caches;  // "kv_caches", absent when empty
  // "cpu_features", absent when empty: the dot-product features some kernels were compiled for
  // (CpuFacts::feature_list names: avx512_bf16, avx512_vnni); the runner refuses a CPU without.
  std::vector<std::string> cpu_features;
  // kernel_table_hash() when compiled; the generated header carries the same value.
  std::string kernel_table_hash_recorded;

  std::string to_json() const;
  // Parses and checks the schema: GafError "<origin>: field '<path>': ..." on the first problem.
  static AotPlan from_json(const std::string& text, const std::string& origin);
  // Cross-checks (GafError "<origin>: ..." naming the field and value): every buffer inside the
  // arena, aligned, its bytes its shape's, no two buffers live at once overlapping; every weight
  // inside the weights file with its shape's bytes; outputs with their buffer's shape; every
  // group argument a known value with kernel outputs in the arena; every kernel named by a group
  // listed; and the recorded kernel table hash equal to the one this plan's content gives.
  void validate(const std::string& origin) const;
  // A hash of every group's kernel and the dtypes and shapes of its arguments in order: the
  // contract between the plan and the compiled kernels (whose extents are compile-time
  // constants). A plan of another model, sequence length or edited by hand gives another hash.
  std::string kernel_table_hash() const;
};

}  // namespace gaf
