#include "generators/direct_call.h"

#include <cstdlib>
#include <map>
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

// The kernels' own buffers (a Conv's flat operand, staged blocks), allocated and freed on every
// call. Above glibc's largest mmap threshold (32 MB) each is a fresh mapping, its pages faulted in
// on every call: a 3x3 Conv over 8 images of 224x224x32 (a 52 MB operand) took 103 ms instead of
// 8 x 3.1 on this VM. Blocks of 1 MB and more are kept for reuse, by exact size, up to 1 GB in
// all; smaller ones go straight to malloc. Each block carries its size in a 128-byte header (the
// pointers Halide gets stay 128-byte aligned, as its own allocator's).
constexpr size_t kHeader = 128, kPooledFrom = size_t{1} << 20, kPoolCap = size_t{1} << 30;
std::mutex pool_mutex;
std::multimap<size_t, void*> pool;  // size -> block (its header)
size_t pooled_bytes = 0;

void* kernel_malloc(Halide::JITUserContext*, size_t bytes) {
  const size_t size = (bytes + kHeader + 127) / 128 * 128;
  void* block = nullptr;
  if (size >= kPooledFrom) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    auto it = pool.find(size);
    if (it != pool.end()) {
      block = it->second;
      pooled_bytes -= size;
      pool.erase(it);
    }
  }
  if (!block && !(block = std::aligned_alloc(128, size))) return nullptr;
  *static_cast<size_t*>(block) = size;
  return static_cast<char*>(block) + kHeader;
}

void kernel_free(Halide::JITUserContext*, void* p) {
  if (!p) return;
  void* block = static_cast<char*>(p) - kHeader;
  const size_t size = *static_cast<size_t*>(block);
  if (size >= kPooledFrom) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (pooled_bytes + size <= kPoolCap) {
      pool.emplace(size, block);
      pooled_bytes += size;
      return;
    }
  }
  std::free(block);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    Halide::JITHandlers h;
    h.custom_error = keep_error;
    h.custom_malloc = kernel_malloc;
    h.custom_free = kernel_free;
    Halide::Internal::JITSharedRuntime::set_default_handlers(h);
  });
}

}  // namespace

DirectCall::DirectCall(Halide::Pipeline& p, const std::vector<Halide::Argument>& args, const Halide::Target& target,
                       const std::string& name) {
  install_handlers();
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
