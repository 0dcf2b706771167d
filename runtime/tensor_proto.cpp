#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/tensor_io.h"

namespace gaf {

namespace fs = std::filesystem;

namespace {

DType dtype_from_onnx(int t, const std::string& what) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::Float32;
    case onnx::TensorProto::INT64: return DType::Int64;
    case onnx::TensorProto::BOOL: return DType::Bool;
    default:
      throw GafError(what + ": tensor element type " +
                     onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)) +
                     " is not supported (float32, int64, bool are)");
  }
}

// Reads `length` bytes at `offset` of an external data file that must lie inside `dir`.
std::string read_external(const onnx::TensorProto& p, const std::string& what,
                          const std::string& dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (dir.empty()) throw GafError(what + ": external data is not allowed here");
  if (location.empty()) throw GafError(what + ": external data without a location");
  fs::path base = fs::weakly_canonical(fs::path(dir));
  fs::path file = fs::weakly_canonical(base / location);
  auto rel = file.lexically_relative(base);
  if (fs::path(location).is_absolute() || rel.empty() || *rel.begin() == "..")
    throw GafError(what + ": external data location '" + location +
                   "' escapes the model's folder " + base.string());
  std::ifstream f(file, std::ios::binary);
  if (!f) throw GafError(what + ": cannot open external data file " + file.string());
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    throw GafError(what + ": external data range [" + std::to_string(offset) + ", " +
                   std::to_string(offset + length) + ") is outside " + file.string() + " (" +
                   std::to_string(size) + " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  return bytes;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what,
                         const std::string& external_dir) {
  DType dtype = dtype_from_onnx(p.data_type(), what);
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw GafError(what + ": negative dim in tensor shape " + shape_str(shape));
  Tensor t(dtype, shape);
  const int64_t n = t.numel();
  auto need = [&](int64_t got) {
    if (got != n)
      throw GafError(what + ": tensor has " + std::to_string(got) + " elements, its shape " +
                     shape_str(shape) + " needs " + std::to_string(n));
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes = read_external(p, what, external_dir);
    if (bytes.size() != t.nbytes())
      throw GafError(what + ": external data has " + std::to_string(bytes.size()) +
                     " bytes, expected " + std::to_string(t.nbytes()));
    if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes())
      throw GafError(what + ": raw data has " + std::to_string(p.raw_data().size()) +
                     " bytes, expected " + std::to_string(t.nbytes()) + " for " +
                     dtype_name(dtype) + shape_str(shape));
    if (n) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  switch (dtype) {
    case DType::Float32:
      need(p.float_data_size());
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = p.float_data(static_cast<int>(i));
      break;
    case DType::Int64:
      need(p.int64_data_size());
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = p.int64_data(static_cast<int>(i));
      break;
    case DType::Bool:
      need(p.int32_data_size());
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = p.int32_data(static_cast<int>(i)) ? 1 : 0;
      break;
  }
  return t;
}

Tensor read_tensor_pb(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw GafError(path + ": cannot open tensor file");
  onnx::TensorProto p;
  if (!p.ParseFromIstream(&f)) throw GafError(path + ": not a valid ONNX TensorProto");
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
