// A JIT-compiled pipeline called through its argv entry point, as the AOT plan runtime calls a
// compiled library's kernels: the arguments are raw halide_buffer_t's filled in place from the
// tensors, with no Halide::Buffer, Realization or parameter binding per call. Pipeline::realize
// spent ~2 us per call on those (a 2-layer decoder's step of 16 groups: 0.076 -> 0.048 ms).
// Runtime errors (a failed bounds check) come back as a GafError naming the kernel, with the
// runtime's message. Includes Halide.h: for generator files only.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace gaf {

class DirectCall {
 public:
  DirectCall() = default;
  // Compiles `p` with `args` (inputs, dims, then the outputs as the pipeline's output buffers)
  // for `target` into a JIT module of its own.
  DirectCall(Halide::Pipeline& p, const std::vector<Halide::Argument>& args, const Halide::Target& target,
             const std::string& name);
  bool defined() const { return fn_ != nullptr; }
  // inputs[k] for each buffer argument, then `scalars` (int32, the dims), then `outputs`.
  void call(const std::vector<const Tensor*>& inputs, const std::vector<int32_t>& scalars,
            const std::vector<Tensor*>& outputs, const std::string& what);
  // The entry point on arguments the caller laid out (inputs, scalars, outputs): no copy.
  void call_argv(void** args, const std::string& what);

 private:
  void fill(size_t slot, const Tensor& t);
  Halide::Internal::JITModule module_;
  Halide::Internal::JITModule::argv_wrapper fn_ = nullptr;
  std::vector<halide_buffer_t> bufs_;                  // one per buffer argument, reused
  std::vector<std::vector<halide_dimension_t>> dims_;  // their dims
  std::vector<const void*> argv_;
};

}  // namespace gaf
