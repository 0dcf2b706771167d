// float32 <-> IEEE half (fp16) and bfloat16 as bit patterns (uint16_t), round to nearest even.
// Host-side twins of the Halide expressions in fusion/ops/low_precision.h (tensor I/O, as_double,
// tests); both follow the same steps so that host and kernel results agree bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace gaf {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// NaN stays a quiet NaN with its sign (adding the rounding bias to a NaN could carry into inf).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Magnitudes >= 65520 round to inf; below 2^-14 the result is subnormal, rounded by one float
// addition (the hardware's round to nearest even) against 0.5, whose ulp is fp16's smallest step.
inline uint16_t float_to_fp16_bits(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint32_t o;
  if (u >= 0x47800000u) {  // >= 65536, inf or NaN
    o = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u < 0x38800000u) {  // < 2^-14
    o = float_bits(bits_float(u) + 0.5f) - 0x3f000000u;
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    o = (u + 0xc8000fffu + odd) >> 13;  // rebias the exponent by (15 - 127) << 23, round
  }
  return static_cast<uint16_t>(o | sign);
}
inline float fp16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t o = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = o & 0x0f800000u;
  o += (127u - 15u) << 23;
  if (exp == 0x0f800000u) {
    o += (128u - 16u) << 23;  // inf / NaN
  } else if (exp == 0) {      // subnormal: renormalise through one float subtraction
    o = float_bits(bits_float(o + (1u << 23)) - bits_float(113u << 23));
  }
  return bits_float(o | sign);
}

}  // namespace gaf
