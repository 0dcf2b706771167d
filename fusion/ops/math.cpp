#include "fusion/ops/math.h"

namespace gaf {

using namespace Halide;

Expr erf_f32(const Expr& x_in) {
  Expr x = cast<float>(x_in);
  Expr ax = abs(x);
  // Taylor: erf(x) = 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
  Expr x2 = x * x;
  Expr series = x * (1.0f + x2 * (-1.0f / 3 + x2 * (1.0f / 10 + x2 * (-1.0f / 42 + x2 * (1.0f / 216 + x2 * (-1.0f / 1320))))));
  series = series * 1.1283791670955126f;
  Expr t = 1.0f / (1.0f + 0.3275911f * ax);
  Expr poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  Expr as = 1.0f - poly * exp(-ax * ax);
  Expr big = select(x < 0, -as, as);
  return select(ax < 0.5f, series, big);
}

Expr gelu_erf_f32(const Expr& x) { return 0.5f * x * (1.0f + erf_f32(x * 0.70710678118654752f)); }

Expr gelu_tanh_f32(const Expr& x) {
  return 0.5f * x * (1.0f + tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

}  // namespace gaf
