// Comparing tensors with a stated tolerance: |got - want| <= atol + rtol * |want| for the float
// types, float16/bfloat16 read as their values (NaN matches NaN, infinities must match exactly),
// exact equality for the integer types and bool.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include "runtime/tensor.h"

namespace gaf::testing {

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

// Empty string when equal within tolerance, else a sentence describing the first mismatch.
inline std::string compare_tensors(const Tensor& got, const Tensor& want, Tolerance tol = {}) {
  std::ostringstream os;
  if (got.dtype() != want.dtype()) {
    os << "dtype " << dtype_name(got.dtype()) << " != expected " << dtype_name(want.dtype());
    return os.str();
  }
  if (got.shape() != want.shape()) {
    os << "shape " << shape_str(got.shape()) << " != expected " << shape_str(want.shape());
    return os.str();
  }
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok;
    if (is_float_dtype(got.dtype())) {
      double g = got.as_double(i), w = want.as_double(i);
      if (std::isnan(w))
        ok = std::isnan(g);
      else if (std::isinf(w))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      if (!ok) worst = std::max(worst, std::fabs(g - w));
    } else {
      ok = got.as_int(i) == want.as_int(i);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return "";
  os << bad << " of " << got.numel() << " elements differ; first at flat index " << first << ": got "
     << got.as_double(first) << ", expected " << want.as_double(first);
  if (is_float_dtype(got.dtype())) os << " (max abs diff " << worst << ")";
  return os.str();
}

}  // namespace gaf::testing
