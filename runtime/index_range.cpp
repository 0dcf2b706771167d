#include "runtime/index_range.h"

namespace gaf {

namespace {

template <typename T>
std::string first_out_of_range(const T* p, int64_t count, int64_t extent, int axis, const std::string& name) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = static_cast<int64_t>(p[i]);
    if (k < -extent || k >= extent)
      return "index " + std::to_string(k) + " (element " + std::to_string(i) + " of indices '" + name +
             "') is out of range for axis " + std::to_string(axis) + " of extent " + std::to_string(extent);
  }
  return "";
}

}  // namespace

std::string index_out_of_range(DType dtype, const void* data, int64_t count, int64_t extent, int axis,
                               const std::string& indices_name) {
  if (count == 0) return "";
  if (dtype == DType::Int64)
    return first_out_of_range(static_cast<const int64_t*>(data), count, extent, axis, indices_name);
  if (dtype == DType::Int32)
    return first_out_of_range(static_cast<const int32_t*>(data), count, extent, axis, indices_name);
  return "";
}

}  // namespace gaf
