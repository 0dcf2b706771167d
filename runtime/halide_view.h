// A tensor's storage as a Halide kernel sees it, with HalideRuntime.h only (no compiler): ONNX's
// row-major axes reversed (Halide's dim 0 is innermost, stride 1), a window of a block (a KV
// cache) with its rows at their coordinates in the block and the block's strides — a kernel
// writing rows [past, past + new) computes those rows only. Shared by the plan runner and the
// JIT kernels' direct calls (generators/halide_buffers.h).
#pragma once

#include <HalideRuntime.h>

#include <vector>

#include "runtime/tensor.h"

namespace gaf {

// `t`'s axes as Halide's dims (innermost first) into `dims`, reusing its storage.
inline void halide_dims_of(const Tensor& t, std::vector<halide_dimension_t>& dims) {
  dims.clear();
  const std::vector<int64_t> strides = t.strides();
  for (int d = t.rank() - 1; d >= 0; --d) {
    const int64_t min = d == t.window_axis() ? t.window_begin() : 0;
    dims.push_back(halide_dimension_t(static_cast<int32_t>(min), static_cast<int32_t>(t.shape()[d]),
                                      static_cast<int32_t>(strides[d])));
  }
}

// `b` (its type set by the caller) over `t`'s storage, its dims in `dims` (kept alive by the caller).
inline void halide_view_of(const Tensor& t, halide_buffer_t& b, std::vector<halide_dimension_t>& dims) {
  halide_dims_of(t, dims);
  b.dimensions = static_cast<int32_t>(dims.size());
  b.dim = dims.empty() ? nullptr : dims.data();
  b.host = static_cast<uint8_t*>(const_cast<void*>(t.raw()));
}

}  // namespace gaf
