#include "generators/direct_call.h"

#include <mutex>

#include "generators/halide_buffers.h"

namespace gaf {

namespace {

// The runtime's message of the failing call. Kernels run one at a time, but a message may come
// from one of Halide's worker threads: one string, under a lock.
std::mutex error_mutex;
std::string last_error;

void keep_error(Halide::JITUserContext*, const char* msg) {
  std::lock_guard<std::mutex> lock(error_mutex);
  last_error += msg;
}

void install_error_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    Halide::JITHandlers h;
    h.custom_error = keep_error;
    Halide::Internal::JITSharedRuntime::set_default_handlers(h);
  });
}

}  // namespace

DirectCall::DirectCall(Halide::Pipeline& p, const std::vector<Halide::Argument>& args, const Halide::Target& target,
                       const std::string& name) {
  install_error_handler();
  Halide::Module m = p.compile_to_module(args, name, target.with_feature(Halide::Target::JIT)).resolve_submodules();
  module_ = Halide::Internal::JITModule(m, m.functions().back());
  fn_ = module_.argv_function();
  size_t buffers = 0;
  for (const Halide::Argument& a : args) buffers += a.is_buffer() ? 1 : 0;
  buffers += p.outputs().size();
  bufs_.resize(buffers);
  dims_.resize(buffers);
}

void DirectCall::fill(size_t slot, const Tensor& t) {
  halide_buffer_t& b = bufs_[slot];
  b = halide_buffer_t();
  b.type = halide_type(t.dtype());
  halide_view_of(t, b, dims_[slot]);
  argv_.push_back(&b);
}

void DirectCall::call(const std::vector<const Tensor*>& inputs, const std::vector<int32_t>& scalars,
                      const std::vector<Tensor*>& outputs, const std::string& what) {
  if (inputs.size() + outputs.size() != bufs_.size())
    throw GafError("internal: " + what + " takes " + std::to_string(bufs_.size()) + " buffers, given " +
                   std::to_string(inputs.size() + outputs.size()));
  argv_.clear();
  size_t slot = 0;
  for (const Tensor* t : inputs) {
    if (!t) throw GafError("internal: " + what + " is missing input " + std::to_string(slot));
    fill(slot++, *t);
  }
  for (const int32_t& s : scalars) argv_.push_back(&s);  // alive until the call returns
  for (Tensor* t : outputs) fill(slot++, *t);
  call_argv(const_cast<void**>(argv_.data()), what);
}

void DirectCall::call_argv(void** args, const std::string& what) {
  const int rc = fn_(const_cast<const void**>(args));
  if (rc != 0) {
    std::lock_guard<std::mutex> lock(error_mutex);
    const std::string msg = last_error.empty() ? "Halide error " + std::to_string(rc) : last_error;
    last_error.clear();
    throw GafError(what + " execution failed: " + msg);
  }
}

}  // namespace gaf
