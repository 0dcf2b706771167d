// Wrapping a Tensor's storage as a Halide buffer (no copy), its dims as runtime/halide_view.h
// lays them out.
#pragma once

#include <Halide.h>

#include <optional>

#include "fusion/ops/op_builder.h"
#include "runtime/halide_view.h"

namespace gaf {

// A dense halide_buffer_t (mins 0, row-major strides) as a Tensor sharing its storage; GafError
// for a type no DType has or a buffer that is not dense.
inline Tensor tensor_view_of(const halide_buffer_t& b) {
  std::optional<DType> dtype;
  for (DType t : kAllDTypes)
    if (halide_type(t) == Halide::Type(b.type)) dtype = t;
  if (!dtype) throw GafError("internal: a kernel buffer of a type no tensor dtype has");
  Shape shape;
  int64_t stride = 1;
  for (int d = 0; d < b.dimensions; ++d) {
    if (b.dim[d].min != 0 || b.dim[d].stride != stride) throw GafError("internal: a kernel buffer that is not dense");
    stride *= b.dim[d].extent;
  }
  for (int d = b.dimensions - 1; d >= 0; --d) shape.push_back(b.dim[d].extent);
  return Tensor::in_storage(*dtype, shape, std::shared_ptr<uint8_t>(std::shared_ptr<uint8_t>(), b.host));
}

inline Halide::Buffer<> halide_buffer_of(const Tensor& t) {
  std::vector<halide_dimension_t> dims;
  halide_dims_of(t, dims);
  return Halide::Buffer<>(halide_type(t.dtype()), const_cast<void*>(t.raw()), t.rank(), dims.data());
}

// Binds `inputs[k]` to `params[k]` (where defined) and realises `pipeline` into the outputs listed
// in `computed` (zero-sized outputs are left out of pipelines). `what` names the kernel in errors.
inline void realize_into(Halide::Pipeline& pipeline, std::vector<Halide::ImageParam>& params,
                         const std::vector<const Tensor*>& inputs, const std::vector<int>& computed,
                         std::vector<Tensor>& outputs, const std::string& what) {
  if (computed.empty()) return;
  for (size_t k = 0; k < params.size(); ++k)
    if (params[k].defined()) {
      if (!inputs.at(k)) throw GafError("internal: " + what + " is missing input " + std::to_string(k));
      params[k].set(halide_buffer_of(*inputs[k]));
    }
  std::vector<Halide::Buffer<>> bufs;
  for (int k : computed) bufs.push_back(halide_buffer_of(outputs[k]));
  Halide::Realization r(bufs);
  try {
    pipeline.realize(r);
  } catch (const Halide::Error& e) {
    throw GafError(what + " execution failed: " + std::string(e.what()));
  }
}

}  // namespace gaf
