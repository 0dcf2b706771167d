#include "generators/precision.h"

namespace gaf {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "bf16") return Precision::Bf16;
  throw GafError("--precision: unknown precision '" + name + "' (expected fp32 or bf16)");
}

const char* precision_name(Precision p) { return p == Precision::Bf16 ? "bf16" : "fp32"; }

}  // namespace gaf
