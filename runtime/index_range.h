// Indices into an axis (ONNX Gather's): each must lie in [-n, n) for the axis' extent n. Kernels
// clamp instead (bounds inference must stay inside the buffer), so every executor checks the
// contents before the node runs: the reference and folding through the op's schema, the fused
// executor and the plan runner for indices that come from outside the group. No Halide here.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace gaf {

// Empty when every one of the `count` indices at `data` (Int64 or Int32; other dtypes are not
// indices: empty) lies in [-extent, extent); else the first one out of range:
// "index 7 (element 2 of indices 'ids') is out of range for axis 0 of extent 5".
std::string index_out_of_range(DType dtype, const void* data, int64_t count, int64_t extent, int axis,
                               const std::string& indices_name);

}  // namespace gaf
