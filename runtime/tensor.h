// Tensor: the plain data container shared by every layer (dtype, row-major shape, aligned bytes).
// It knows nothing of Halide or of the graph; the runtime, the IR's initializers and the I/O
// readers all pass tensors around by value (copies share the storage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/float16.h"

namespace gaf {

// Element types graph-autofusion executes. Bool is stored as one byte per element (0 or 1);
// Float16 (IEEE half) and BFloat16 as their 16-bit patterns. New types go at the end: the values
// are not written anywhere, but keeping them stable costs nothing.
enum class DType : uint8_t { Float32, Int64, Bool, Float16, BFloat16, Int8, UInt8, Int32 };
inline constexpr DType kAllDTypes[] = {DType::Float32,  DType::Int64, DType::Bool,  DType::Float16,
                                       DType::BFloat16, DType::Int8,  DType::UInt8, DType::Int32};
inline bool is_float_dtype(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

size_t dtype_size(DType t);
const char* dtype_name(DType t);

// An ONNX TensorProto.DataType code (tensors' data_type, value infos' elem_type, Cast's `to`) as
// ours, or nullopt; kSupportedOnnxTypes lists ours for messages. Here, with plain numbers, so
// that the op library (no protobuf) maps Cast's `to` through the same table as the readers.
std::optional<DType> dtype_of_onnx(int onnx_type);
extern const char kSupportedOnnxTypes[];

using Shape = std::vector<int64_t>;

// Element count and byte size of a shape, overflow-checked: shapes come from files, --dim and
// model options, so a product that does not fit in int64 (or a negative extent) is an error
// (GafError naming the shape; callers add the tensor). Every size computation goes through these.
int64_t shape_numel(const Shape& s);
int64_t byte_size(DType t, const Shape& s);
// a * b or a + b for sizes; GafError naming `what` if the result does not fit in int64.
int64_t checked_mul(int64_t a, int64_t b, const char* what = "size");
int64_t checked_add(int64_t a, int64_t b, const char* what = "size");
std::string shape_str(const Shape& s);
// The whole of `text` as a decimal integer >= 0 that fits in int64; nullopt otherwise (sizes,
// offsets and dims read from files and flags; no exceptions of std::stoll to leak).
std::optional<int64_t> parse_size(const std::string& text);

// The one error type users see: what() is a single line naming the file/node/tensor at fault.
class GafError : public std::runtime_error {
 public:
  explicit GafError(const std::string& msg) : std::runtime_error(msg) {}
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-initialised, 64-byte aligned storage.
  Tensor(DType dtype, Shape shape);
  // The same without the zero fill, for buffers a kernel writes whole (kernel outputs): the
  // fill would be a full extra pass over memory per output.
  static Tensor uninitialized(DType dtype, Shape shape);

  template <typename T>
  static Tensor from_values(DType dtype, Shape shape, const std::vector<T>& values);
  // A tensor over `storage` (not copied, kept alive by the tensor; e.g. a slice of an arena
  // through shared_ptr's aliasing constructor). The caller guarantees nbytes() of it, 64-byte
  // aligned.
  static Tensor in_storage(DType dtype, Shape shape, std::shared_ptr<uint8_t> storage);
  // A tensor whose contents are made on first access to its bytes (raw(), data(), part(), ...):
  // `fill` writes every element of a tensor of this dtype and shape (its storage is not zeroed
  // first: the weights it makes would be written twice). Until then nothing is allocated, so
  // what reads only shapes — planning, reports — costs no memory for weights (a 210-layer BERT
  // plans in under a second). Copies share the one fill; it runs once, under a lock.
  static Tensor deferred(DType dtype, Shape shape, std::function<void(Tensor&)> fill);
  // False while a deferred tensor's bytes have not been made.
  bool materialized() const;

  bool defined() const { return storage_ != nullptr || deferred_ != nullptr || numel() == 0; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(byte_size(dtype_, shape_)); }

  void* raw() { return storage().get(); }
  const void* raw() const { return storage().get(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  // Element i converted to double / int64 whatever the dtype (for small metadata tensors).
  double as_double(int64_t i) const;
  int64_t as_int(int64_t i) const;
  std::vector<int64_t> to_int_vector() const;

  // Same bytes, new shape (numel must match).
  Tensor reshaped(Shape shape) const;
  // A tensor over this one's bytes from `byte_offset` on (no copy, shares ownership; not
  // necessarily 64-byte aligned), e.g. one rank's block of rows. Its bytes must fit.
  Tensor part(int64_t byte_offset, Shape shape) const;
  // A dense copy (of a window's elements too).
  Tensor clone() const;

  // Windows of a block: a KV cache preallocated to its longest length and appended in place.
  // The block is a row-major tensor; a window is the block restricted to rows [begin, end) of one
  // axis, so its elements are strides() apart, not dense, and data() points at its first
  // element. Kernels take windows (halide_buffers.h); code that reads data() as a dense array
  // must not be handed one (clone() first).
  // An uninitialised block of `capacity` rows along `axis`, as its window [0, shape[axis]).
  static Tensor with_capacity(DType dtype, Shape shape, int axis, int64_t capacity);
  // Rows [begin, end) of this window's block (block coordinates), sharing its storage.
  Tensor window(int64_t begin, int64_t end) const;
  bool is_window() const { return window_axis_ >= 0; }
  int window_axis() const { return window_axis_; }
  int64_t window_begin() const { return window_begin_; }
  int64_t capacity() const { return capacity_; }  // the block's rows along window_axis()
  // Copies `src` (same dtype and shape, either layout) into this tensor's elements.
  void copy_from(const Tensor& src);
  // Whether `other` is a window of the same block.
  bool same_block(const Tensor& other) const;
  // Element strides per axis (row-major over the block; dense: over the shape).
  std::vector<int64_t> strides() const;

 private:
  DType dtype_ = DType::Float32;
  Shape shape_;
  std::shared_ptr<uint8_t> storage_;  // null while deferred_ has not made the bytes
  struct Deferred;
  std::shared_ptr<Deferred> deferred_;  // set by deferred(); shared by copies
  // The bytes: storage_, or a deferred tensor's, made now if they were not yet.
  const std::shared_ptr<uint8_t>& storage() const;
  int window_axis_ = -1;  // >= 0: a window of a block (see with_capacity)
  int64_t window_begin_ = 0, capacity_ = 0;
  const uint8_t* block_base() const;
  struct NoFill {};
  Tensor(DType dtype, Shape shape, NoFill);
};

template <typename T>
Tensor Tensor::from_values(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw GafError("Tensor::from_values: " + std::to_string(values.size()) + " values for shape " +
                   shape_str(t.shape()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::Float32: t.data<float>()[i] = static_cast<float>(values[i]); break;
      case DType::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(values[i]); break;
      case DType::Bool: t.data<uint8_t>()[i] = values[i] ? 1 : 0; break;
      case DType::Float16: t.data<uint16_t>()[i] = float_to_fp16_bits(static_cast<float>(values[i])); break;
      case DType::BFloat16: t.data<uint16_t>()[i] = float_to_bf16_bits(static_cast<float>(values[i])); break;
      case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(values[i]); break;
      case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]); break;
      case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(values[i]); break;
    }
  }
  return t;
}

}  // namespace gaf
