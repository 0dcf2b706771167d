#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "runtime/tensor_io.h"

namespace gaf {

namespace fs = std::filesystem;

// dtype_of_onnx (runtime/tensor.cpp) spells the codes as numbers, having no protobuf.
static_assert(onnx::TensorProto::FLOAT == 1 && onnx::TensorProto::UINT8 == 2 && onnx::TensorProto::INT8 == 3 &&
              onnx::TensorProto::INT32 == 6 && onnx::TensorProto::INT64 == 7 && onnx::TensorProto::BOOL == 9 &&
              onnx::TensorProto::FLOAT16 == 10 && onnx::TensorProto::BFLOAT16 == 16);

std::string onnx_type_name(int t) {
  if (!onnx::TensorProto_DataType_IsValid(t)) return "#" + std::to_string(t);
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
}

namespace {

DType dtype_from_onnx(int t, const std::string& what) {
  if (std::optional<DType> d = dtype_of_onnx(t)) return *d;
  throw GafError(what + ": tensor element type " + onnx_type_name(t) + " is not supported (" + kSupportedOnnxTypes +
                 " are)");
}

// A non-negative decimal integer field of external data ("offset", "length").
int64_t external_int(const std::string& text, const std::string& key, const std::string& what) {
  std::optional<int64_t> v = parse_size(text);
  if (!v) throw GafError(what + ": external data " + key + " '" + text + "' is not a non-negative integer");
  return *v;
}

// Where an external tensor's bytes are: a regular file inside `dir`, a range checked against its
// size. Opened before the tensor is allocated, so a bad range costs nothing.
struct ExternalRange {
  std::unique_ptr<RegularFile> file;
  std::string path;  // the file, resolved inside the model's folder
  int64_t offset = 0, length = 0;
};

ExternalRange open_external(const onnx::TensorProto& p, const std::string& what, const std::string& dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = external_int(kv.value(), "offset", what);
    else if (kv.key() == "length")
      length = external_int(kv.value(), "length", what);
  }
  if (dir.empty()) throw GafError(what + ": external data is not allowed here");
  if (location.empty()) throw GafError(what + ": external data without a location");
  fs::path base, file;
  try {
    base = fs::weakly_canonical(fs::path(dir));
    file = fs::weakly_canonical(base / location);
  } catch (const fs::filesystem_error& e) {
    throw GafError(what + ": external data location '" + location + "': " + e.code().message());
  }
  auto rel = file.lexically_relative(base);
  if (fs::path(location).is_absolute() || rel.empty() || *rel.begin() == ".." || rel == ".")
    throw GafError(what + ": external data location '" + location + "' escapes the model's folder " + base.string());
  ExternalRange r;
  try {
    r.file = std::make_unique<RegularFile>(file.string(), "external data file");
  } catch (const GafError& e) {
    throw GafError(what + ": " + e.what());
  }
  const int64_t size = r.file->size();
  if (offset > size || (length >= 0 && length > size - offset))
    throw GafError(what + ": external data range offset " + std::to_string(offset) + ", length " +
                   (length < 0 ? std::string("(to the end)") : std::to_string(length)) + " is outside " +
                   file.string() + " (" + std::to_string(size) + " bytes)");
  r.path = file.string();
  r.offset = offset;
  r.length = length < 0 ? size - offset : length;
  return r;
}

}  // namespace

int64_t tensor_proto_bytes(const onnx::TensorProto& p, const std::string& what) {
  DType dtype = dtype_from_onnx(p.data_type(), what);
  Shape shape(p.dims().begin(), p.dims().end());
  try {
    return byte_size(dtype, shape);
  } catch (const GafError& e) {
    throw GafError(what + ": " + e.what());
  }
}

namespace {

// Smaller raw_data tensors (shapes, scalars, biases) are copied at once: folding reads most of them.
constexpr int64_t kDeferFrom = 64 * 1024;

// The tensor of `p`. With `owner` (== &p, mutable), a raw_data tensor of kDeferFrom bytes or more
// takes the message's bytes (moved, not copied) and is made when first read.
Tensor from_proto(const onnx::TensorProto& p, const std::string& what, const std::string& external_dir,
                  onnx::TensorProto* owner) {
  DType dtype = dtype_from_onnx(p.data_type(), what);
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw GafError(what + ": negative dim in tensor shape " + shape_str(shape));
  const int64_t bytes = tensor_proto_bytes(p, what);
  const int64_t n = bytes / static_cast<int64_t>(dtype_size(dtype));
  auto allocate = [&] {
    try {
      return Tensor::uninitialized(dtype, shape);
    } catch (const GafError& e) {
      throw GafError(what + ": " + e.what());
    }
  };
  // Declared sizes are checked against the bytes present before anything is allocated.
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalRange r = open_external(p, what, external_dir);
    if (r.length != bytes)
      throw GafError(what + ": external data has " + std::to_string(r.length) + " bytes, expected " +
                     std::to_string(bytes) + " for " + dtype_name(dtype) + shape_str(shape));
    // Read when first used (Tensor::deferred): planning and reports of a model whose weights are
    // external (every model over 2 GB) read none of them. The range was checked above; the file
    // is opened again then, and an error names the tensor.
    return Tensor::deferred(dtype, shape, [path = r.path, offset = r.offset, length = r.length, what](Tensor& t) {
      try {
        RegularFile(path, "external data file").read_into(offset, length, t.raw());
      } catch (const GafError& e) {
        throw GafError(what + ": " + e.what());
      }
    });
  }
  if (p.has_raw_data()) {
    if (static_cast<int64_t>(p.raw_data().size()) != bytes)
      throw GafError(what + ": raw data has " + std::to_string(p.raw_data().size()) + " bytes, expected " +
                     std::to_string(bytes) + " for " + dtype_name(dtype) + shape_str(shape));
    if (owner && bytes >= kDeferFrom) {
      // A plan or a report reads no weight, and a run holds each weight once (the bytes are freed
      // when the tensor's storage is made).
      std::shared_ptr<std::string> raw(owner->release_raw_data());
      return Tensor::deferred(dtype, shape, [raw](Tensor& t) { std::memcpy(t.raw(), raw->data(), raw->size()); });
    }
    Tensor t = allocate();
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), static_cast<size_t>(bytes));
    return t;
  }
  // The typed fields: float and int64 have their own; every narrower type is stored one element
  // per int32_data entry (float16/bfloat16 as their bit patterns in the low 16 bits).
  const int64_t count = dtype == DType::Float32 ? p.float_data_size()
                        : dtype == DType::Int64 ? p.int64_data_size()
                                                : p.int32_data_size();
  if (count != n)
    throw GafError(what + ": tensor has " + std::to_string(count) + " elements, its shape " + shape_str(shape) +
                   " needs " + std::to_string(n));
  Tensor t = allocate();
  switch (dtype) {
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = p.float_data(static_cast<int>(i));
      break;
    case DType::Int64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = p.int64_data(static_cast<int>(i));
      break;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = p.int32_data(static_cast<int>(i)) ? 1 : 0;
      break;
    case DType::Float16:
    case DType::BFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      break;
    case DType::Int8:
      for (int64_t i = 0; i < n; ++i) t.data<int8_t>()[i] = static_cast<int8_t>(p.int32_data(static_cast<int>(i)));
      break;
    case DType::UInt8:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(p.int32_data(static_cast<int>(i)));
      break;
    case DType::Int32:
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = p.int32_data(static_cast<int>(i));
      break;
  }
  return t;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what, const std::string& external_dir) {
  return from_proto(p, what, external_dir, nullptr);
}

Tensor take_tensor_from_proto(onnx::TensorProto& p, const std::string& what, const std::string& external_dir) {
  return from_proto(p, what, external_dir, &p);
}

Tensor read_tensor_pb(const std::string& path) {
  // Protobuf messages are limited to 2 GB.
  const std::string bytes = read_regular_file(path, "tensor file", INT32_MAX);
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) throw GafError(path + ": not a valid ONNX TensorProto");
  return tensor_from_proto(p, path);
}

// Here rather than in npy.cpp, so that gaf_tensor (tensor.cpp, npy.cpp) needs no protobuf.
Tensor read_tensor_file(const std::string& path) {
  auto ends = [&](const std::string& s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".npy")) return read_npy(path);
  if (ends(".pb")) return read_tensor_pb(path);
  throw GafError(path + ": unknown tensor file type (use .npy or .pb)");
}

}  // namespace gaf
