// The sliding window of Conv, MaxPool and AveragePool: per spatial axis the kernel extent, stride,
// dilation and the padding before and after, from the node's attributes (kernel_shape, strides,
// dilations, pads or auto_pad, and for pools ceil_mode), and the output extent they give.
// Shared by the op builders (conv.cpp, pool.cpp); no Halide here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/ops/registry.h"

namespace gaf {

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  Shape out;  // the output's spatial extents

  int spatial() const { return static_cast<int>(kernel.size()); }
  bool padded() const;  // any pad_begin or pad_end > 0 (output position o, kernel offset k read
                        // input position o * stride + k * dilation - pad_begin)
};

// The window of a node over input spatial extents `in`, for a kernel of extents `kernel` (Conv:
// W's spatial shape, checked against kernel_shape when given; pools: kernel_shape, required).
// auto_pad SAME_UPPER / SAME_LOWER give ceil(in / stride) outputs with the padding split (the odd
// one after / before), VALID none; `ceil_mode` (pools) rounds the output extent up, dropping a
// last window that would start in the end padding (as PyTorch does). GafError naming the node
// and the attribute for a value out of range or an empty output.
Window window_of(const InferContext& c, const Shape& in, const std::vector<int64_t>& kernel, bool ceil_mode = false);

// "[1,2,3]".
std::string ints_str(const std::vector<int64_t>& v);

}  // namespace gaf
