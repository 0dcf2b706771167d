#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/tensor_io.h"

namespace gaf {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr int64_t kMaxHeaderBytes = 65536;

// NumPy's type code per dtype. bfloat16 has none (NumPy has no such type; ml_dtypes' '<V2'
// would read back as raw bytes), so .npy refuses it rather than invent a convention.
const char* npy_descr(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Int64: return "<i8";
    case DType::Bool: return "|b1";
    case DType::Float16: return "<f2";
    case DType::BFloat16: return nullptr;
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int32: return "<i4";
  }
  return nullptr;
}

const char kSupported[] =
    "float32 '<f4', float16 '<f2', int64 '<i8', int32 '<i4', int8 '|i1', uint8 '|u1', bool '|b1' are";

}  // namespace

Tensor read_npy(const std::string& path) {
  RegularFile f(path, ".npy file");
  if (f.size() < 10) throw GafError(path + ": not a .npy file (bad magic)");
  const std::string pre = f.read(0, std::min<int64_t>(f.size(), 12));
  if (pre.compare(0, 6, kMagic, 6) != 0) throw GafError(path + ": not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(pre[6]);
  int64_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(pre[8]) | (static_cast<unsigned char>(pre[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (pre.size() < 12) throw GafError(path + ": truncated .npy header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<int64_t>(static_cast<unsigned char>(pre[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw GafError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (f.size() - hstart < hlen) throw GafError(path + ": truncated .npy header");
  // NumPy itself refuses headers over 10000 bytes; a longer one is not a real array.
  if (hlen > kMaxHeaderBytes)
    throw GafError(path + ": .npy header of " + std::to_string(hlen) + " bytes is too long (at most " +
                   std::to_string(kMaxHeaderBytes) + ")");
  std::string header = f.read(hstart, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    throw GafError(path + ": .npy header has no 'descr'");
  std::string descr = m[1];
  // One-byte types have no byte order: NumPy writes '|', '<' is accepted as well.
  if (descr == "<i1" || descr == "<u1" || descr == "<b1") descr[0] = '|';
  std::optional<DType> dtype;
  for (DType t : kAllDTypes)
    if (npy_descr(t) && descr == npy_descr(t)) dtype = t;
  if (!dtype) throw GafError(path + ": .npy dtype '" + descr + "' is not supported (" + kSupported + ")");
  if (std::regex_search(header, std::regex("'fortran_order'\\s*:\\s*True")))
    throw GafError(path + ": Fortran-order .npy arrays are not supported (save C-contiguous)");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    throw GafError(path + ": .npy header has no 'shape'");
  Shape shape;
  std::stringstream ss(m[1].str());
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = std::regex_replace(item, std::regex("\\s+"), "");
    if (item.empty()) continue;
    std::optional<int64_t> d = parse_size(item);
    if (!d) throw GafError(path + ": bad .npy shape entry '" + item + "'");
    shape.push_back(*d);
  }
  int64_t bytes;
  try {
    bytes = byte_size(*dtype, shape);
  } catch (const GafError& e) {
    throw GafError(path + ": .npy shape: " + e.what());
  }
  // The declared size against the bytes present, before anything is allocated.
  const int64_t body = hstart + hlen;
  if (f.size() - body < bytes)
    throw GafError(path + ": truncated .npy data (" + std::to_string(f.size() - body) + " bytes, expected " +
                   std::to_string(bytes) + " for " + dtype_name(*dtype) + shape_str(shape) + ")");
  Tensor t;
  try {
    t = Tensor::uninitialized(*dtype, shape);
  } catch (const GafError& e) {
    throw GafError(path + ": " + e.what());
  }
  f.read_into(body, bytes, t.raw());
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = npy_descr(t.dtype());
  if (!descr)
    throw GafError(path + ": " + dtype_name(t.dtype()) + " cannot be written as .npy (NumPy has no " +
                   dtype_name(t.dtype()) + " type; Cast it to float32 first)");
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 2);
  if (t.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  uint16_t hl = static_cast<uint16_t>(header.size());
  const char preamble[10] = {kMagic[0],
                             kMagic[1],
                             kMagic[2],
                             kMagic[3],
                             kMagic[4],
                             kMagic[5],
                             1,
                             0,
                             static_cast<char>(hl & 0xff),
                             static_cast<char>(hl >> 8)};
  write_file_atomically(
      path, {std::string_view(preamble, 10), header, std::string_view(static_cast<const char*>(t.raw()), t.nbytes())});
}

}  // namespace gaf
