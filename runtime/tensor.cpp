#include "runtime/tensor.h"

#include "runtime/memory_budget.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

namespace gaf {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Int8: return 1;
    case DType::UInt8: return 1;
    case DType::Int32: return 4;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
  }
  return "?";
}

const char kSupportedOnnxTypes[] = "float32, float16, bfloat16, int64, int32, int8, uint8, bool";

std::optional<DType> dtype_of_onnx(int t) {
  switch (t) {  // onnx.proto's TensorProto.DataType
    case 1: return DType::Float32;
    case 2: return DType::UInt8;
    case 3: return DType::Int8;
    case 6: return DType::Int32;
    case 7: return DType::Int64;
    case 9: return DType::Bool;
    case 10: return DType::Float16;
    case 16: return DType::BFloat16;
    default: return std::nullopt;
  }
}

namespace {
[[noreturn]] void throw_overflow(const char* what, int64_t a, const char* op, int64_t b) {
  throw GafError(std::string(what) + " " + std::to_string(a) + op + std::to_string(b) + " does not fit in 64 bits");
}
}  // namespace

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what, a, " x ", b);
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what, a, " + ", b);
  return r;
}

std::optional<int64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v))
      return std::nullopt;
  }
  return v;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw GafError("shape " + shape_str(s) + " has a negative extent");
    if (__builtin_mul_overflow(n, d, &n))
      throw GafError("shape " + shape_str(s) + " has more elements than fit in 64 bits");
  }
  return n;
}

int64_t byte_size(DType t, const Shape& s) {
  int64_t n = shape_numel(s), bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(t)), &bytes))
    throw GafError(std::string(dtype_name(t)) + shape_str(s) + " has more bytes than fit in 64 bits");
  return bytes;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), NoFill{}) {
  std::memset(storage_.get(), 0, nbytes());
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape), NoFill{}); }

Tensor::Tensor(DType dtype, Shape shape, NoFill) : dtype_(dtype), shape_(std::move(shape)) {
  storage_ = allocate_tensor_storage(byte_size(dtype_, shape_), dtype_name(dtype_) + shape_str(shape_));
}

double Tensor::as_double(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return data<float>()[i];
    case DType::Int64: return static_cast<double>(data<int64_t>()[i]);
    case DType::Bool: return data<uint8_t>()[i];
    case DType::Float16: return fp16_bits_to_float(data<uint16_t>()[i]);
    case DType::BFloat16: return bf16_bits_to_float(data<uint16_t>()[i]);
    case DType::Int8: return data<int8_t>()[i];
    case DType::UInt8: return data<uint8_t>()[i];
    case DType::Int32: return data<int32_t>()[i];
  }
  return 0;
}

int64_t Tensor::as_int(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return static_cast<int64_t>(data<float>()[i]);
    case DType::Int64: return data<int64_t>()[i];
    case DType::Bool: return data<uint8_t>()[i];
    case DType::Float16:
    case DType::BFloat16: return static_cast<int64_t>(as_double(i));
    case DType::Int8: return data<int8_t>()[i];
    case DType::UInt8: return data<uint8_t>()[i];
    case DType::Int32: return data<int32_t>()[i];
  }
  return 0;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = as_int(i);
  return v;
}

struct Tensor::Deferred {
  std::once_flag once;
  std::function<void(Tensor&)> fill;
  std::shared_ptr<uint8_t> storage;
};

Tensor Tensor::deferred(DType dtype, Shape shape, std::function<void(Tensor&)> fill) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.deferred_ = std::make_shared<Deferred>();
  t.deferred_->fill = std::move(fill);
  return t;
}

bool Tensor::materialized() const { return !deferred_ || deferred_->storage != nullptr || numel() == 0; }

const std::shared_ptr<uint8_t>& Tensor::storage() const {
  if (!deferred_ || storage_) return storage_;
  Deferred& d = *deferred_;
  std::call_once(d.once, [&] {
    Tensor made = uninitialized(dtype_, shape_);  // fill writes every element (tensor.h)
    d.fill(made);
    d.storage = made.storage_;
    d.fill = nullptr;  // what it captured (e.g. the parts of a deferred concatenation) is freed
  });
  return d.storage;
}

Tensor Tensor::in_storage(DType dtype, Shape shape, std::shared_ptr<uint8_t> storage) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::part(int64_t byte_offset, Shape shape) const {
  if (is_window()) throw GafError("internal: part() of a window of a block");
  const int64_t bytes = byte_size(dtype_, shape);
  if (byte_offset < 0 || byte_offset > static_cast<int64_t>(nbytes()) ||
      bytes > static_cast<int64_t>(nbytes()) - byte_offset)
    throw GafError("internal: a part of " + std::to_string(bytes) + " bytes at " + std::to_string(byte_offset) +
                   " does not fit a tensor of " + std::to_string(nbytes()) + " bytes");
  return in_storage(dtype_, std::move(shape), std::shared_ptr<uint8_t>(storage(), storage().get() + byte_offset));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw GafError("cannot reshape tensor of shape " + shape_str(shape_) + " to " + shape_str(shape));
  if (is_window()) throw GafError("internal: reshaped() of a window of a block");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(dtype_, shape_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::with_capacity(DType dtype, Shape shape, int axis, int64_t capacity) {
  if (axis < 0 || axis >= static_cast<int>(shape.size()) || capacity < shape[axis])
    throw GafError("a block of " + std::to_string(capacity) + " rows along axis " + std::to_string(axis) +
                   " cannot hold " + dtype_name(dtype) + shape_str(shape));
  Shape block = shape;
  block[axis] = capacity;
  Tensor t = uninitialized(dtype, block);
  t.window_axis_ = axis;
  t.capacity_ = capacity;
  t.shape_ = std::move(shape);
  return t;
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> st(shape_.size());
  int64_t s = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    st[d] = s;
    s *= d == window_axis_ ? capacity_ : shape_[d];
  }
  return st;
}

const uint8_t* Tensor::block_base() const {
  return storage().get() - window_begin_ * strides()[window_axis_] * static_cast<int64_t>(dtype_size(dtype_));
}

Tensor Tensor::window(int64_t begin, int64_t end) const {
  if (!is_window()) throw GafError("internal: window() of a tensor that is not a window of a block");
  if (begin < 0 || begin > end || end > capacity_)
    throw GafError("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") do not fit a block of " +
                   std::to_string(capacity_) + " rows along axis " + std::to_string(window_axis_));
  Tensor t = *this;
  const int64_t step = strides()[window_axis_] * static_cast<int64_t>(dtype_size(dtype_));
  t.storage_ = std::shared_ptr<uint8_t>(storage_, storage_.get() + (begin - window_begin_) * step);
  t.window_begin_ = begin;
  t.shape_[window_axis_] = end - begin;
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.dtype_ != dtype_ || src.shape_ != shape_)
    throw GafError("cannot copy " + std::string(dtype_name(src.dtype_)) + shape_str(src.shape_) + " into " +
                   dtype_name(dtype_) + shape_str(shape_));
  if (numel() == 0) return;
  if (!is_window() && !src.is_window()) {
    std::memcpy(raw(), src.raw(), nbytes());
    return;
  }
  // One memcpy per innermost row (stride 1 in every layout).
  const std::vector<int64_t> to = strides(), from = src.strides();
  const size_t esize = dtype_size(dtype_);
  const int64_t row = rank() == 0 ? 1 : shape_.back();
  const int64_t rows = numel() / row;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t a = 0, b = 0, rest = r;
    for (int d = rank() - 2; d >= 0; --d) {
      const int64_t i = rest % shape_[d];
      rest /= shape_[d];
      a += i * to[d];
      b += i * from[d];
    }
    std::memcpy(data<uint8_t>() + a * esize, src.data<uint8_t>() + b * esize, row * esize);
  }
}

bool Tensor::same_block(const Tensor& other) const {
  if (!is_window() || !other.is_window() || dtype_ != other.dtype_ || window_axis_ != other.window_axis_ ||
      capacity_ != other.capacity_ || rank() != other.rank())
    return false;
  for (int d = 0; d < rank(); ++d)
    if (d != window_axis_ && shape_[d] != other.shape_[d]) return false;
  return block_base() == other.block_base();
}

}  // namespace gaf
