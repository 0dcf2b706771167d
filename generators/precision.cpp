#include "generators/precision.h"

namespace gaf {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "bf16") return Precision::Bf16;
  if (name == "int8") return Precision::Int8;
  throw GafError("--precision: unknown precision '" + name + "' (expected fp32, bf16 or int8)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Bf16: return "bf16";
    case Precision::Int8: return "int8";
    default: return "fp32";
  }
}

}  // namespace gaf
