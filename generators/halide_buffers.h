// Wrapping a Tensor's storage as a Halide buffer (no copy): ONNX's row-major axes reversed into
// Halide's dims (dim 0 innermost, stride 1).
#pragma once

#include <Halide.h>

#include "fusion/ops/op_builder.h"

namespace gaf {

inline Halide::Buffer<> halide_buffer_of(const Tensor& t) {
  std::vector<halide_dimension_t> dims;
  int64_t stride = 1;
  for (int d = t.rank() - 1; d >= 0; --d) {
    dims.push_back(halide_dimension_t(0, static_cast<int32_t>(t.shape()[d]), static_cast<int32_t>(stride)));
    stride *= t.shape()[d];
  }
  return Halide::Buffer<>(halide_type(t.dtype()), const_cast<void*>(t.raw()), t.rank(), dims.data());
}

}  // namespace gaf
