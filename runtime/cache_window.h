// One run's KV-cache window (generators/kv_cache.h has the why): the block a present output is
// computed into, shared by the fused executor and the plan runner. No Halide here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/tensor.h"

namespace gaf {

struct CacheWindow {
  Tensor whole;    // rows [0, past + new) of the block: what present is, and what readers read
  Tensor written;  // what the group computing present writes: the new rows when it appends, else whole
  // The past copied into the block's head, when it was not there already: kernels read this
  // instead of the caller's past.
  std::optional<Tensor> moved_past;
};

// The window of present `name` (dtype, this run's `shape`, cache `axis`, block `capacity`, whether
// its group appends) for a run given `past` (null: none) and the tensor the caller kept from the
// previous run (null: none): the block of past when past is a window of a block of this capacity
// at its head (appended in place), else the kept tensor's block when it fits, else a new block.
// GafError naming the cache when the rows do not fit the capacity.
CacheWindow bind_cache_window(const std::string& name, DType dtype, const Shape& shape, int axis, int64_t capacity,
                              bool append, const Tensor* past, const Tensor* kept);

}  // namespace gaf
