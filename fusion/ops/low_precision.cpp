#include "fusion/ops/low_precision.h"

namespace gaf {

using namespace Halide;

namespace {

Expr u32(uint32_t v) { return Internal::make_const(UInt(32), static_cast<uint64_t>(v)); }
Expr as_f32(const Expr& bits) { return reinterpret(Float(32), bits); }

Expr fp16_to_f32(const Expr& x) {
  Expr h = cast(UInt(32), reinterpret(UInt(16), x));
  Expr sign = (h & u32(0x8000)) << 16;
  Expr o = (h & u32(0x7fff)) << 13;
  Expr exp = o & u32(0x0f800000);
  o = o + u32((127 - 15) << 23);
  Expr inf_nan = o + u32((128 - 16) << 23);
  // Subnormal: the mantissa as a float with exponent 2^-14, minus the implicit one.
  Expr subnormal = reinterpret(UInt(32), as_f32(o + u32(1 << 23)) - as_f32(u32(113u << 23)));
  o = select(exp == u32(0x0f800000), inf_nan, exp == u32(0), subnormal, o);
  return as_f32(o | sign);
}

Expr bf16_to_f32(const Expr& x) { return as_f32(cast(UInt(32), reinterpret(UInt(16), x)) << 16); }

}  // namespace

Expr to_f32(const Expr& x) {
  if (x.type() == Float(16)) return fp16_to_f32(x);
  if (x.type() == BFloat(16)) return bf16_to_f32(x);
  return cast(Float(32), x);
}

Expr f32_to_fp16(const Expr& x) {
  Expr u = reinterpret(UInt(32), x);
  Expr sign = (u >> 16) & u32(0x8000);
  Expr a = u & u32(0x7fffffff);
  Expr inf_nan = select(a > u32(0x7f800000), u32(0x7e00), u32(0x7c00));
  // Below 2^-14 the result is subnormal: one float addition against 0.5 (whose ulp is fp16's
  // smallest step) rounds it to nearest even.
  Expr subnormal = reinterpret(UInt(32), as_f32(a) + 0.5f) - u32(0x3f000000);
  // Rebias the exponent by (15 - 127) << 23 (mod 2^32) and round the 13 dropped bits.
  Expr normal = (a + u32(0xc8000fff) + ((a >> 13) & u32(1))) >> 13;
  Expr o = select(a >= u32(0x47800000), inf_nan, a < u32(0x38800000), subnormal, normal);
  return reinterpret(Float(16), cast(UInt(16), o | sign));
}

Expr f32_to_bf16(const Expr& x) {
  Expr u = reinterpret(UInt(32), x);
  Expr nan = (u >> 16) | u32(0x40);
  Expr rounded = (u + u32(0x7fff) + ((u >> 16) & u32(1))) >> 16;
  Expr o = select((u & u32(0x7fffffff)) > u32(0x7f800000), nan, rounded);
  return reinterpret(BFloat(16), cast(UInt(16), o));
}

}  // namespace gaf
