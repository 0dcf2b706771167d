// KV caches the runtime owns. A decoder's graph output `present` (keys or values of every
// position so far) is kept in a block preallocated to the longest length (Tensor::with_capacity)
// instead of a tensor sized per run. Fed back as the next run's `past` input, a run appends to
// the same block: when present = Concat(past, new rows) along the cache axis, the group that
// computes present writes the new rows only, into the block after past's, and readers of present
// (attention) read the block in place. No copy of the cache per token.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf {

struct KvCacheBinding {
  std::string present;   // a graph output
  std::string past;      // the graph input it continues; "" when present is computed whole (prefill)
  int axis = 0;          // the cache's length axis
  int64_t capacity = 0;  // rows the block holds along `axis`
  // Filled by bind_kv_caches: present = Concat(past, rows) on `axis`, computed by a group that
  // does not also read it, so that the group writes only the rows after past's.
  bool append = false;
};

// Checks the bindings against the planned graph and marks past and present as block windows
// (Value::block_window: their kernels use the block's strides); returns them by present with
// `append` decided. GafError naming the value when a binding does not fit the graph (present not
// an output, past not an input, axis out of range, dtype or dims that differ between the two).
std::map<std::string, KvCacheBinding> bind_kv_caches(Graph& g, const FusionPlan& plan,
                                                     const std::vector<KvCacheBinding>& bindings);

// The KV caches of a decoder as exporters name them, `capacity` positions each: every output
// `present.X`, continuing the input `past_key_values.X` when `g` has it (a step), else computed
// whole (a prefill; also when that input is bound to length 0, the prefill of a single-file or
// merged decoder), along the one axis of that input (else of present.X) whose extent is a dynamic
// dim. GafError naming the value when there is no such output or not exactly one such axis.
std::vector<KvCacheBinding> decoder_kv_caches(const Graph& g, int64_t capacity);

}  // namespace gaf
