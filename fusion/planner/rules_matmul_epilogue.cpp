// Built-in rule 2: MatMul/Gemm with its epilogue — bias add, activation (single op or PyTorch's
// decomposed GELU), scale, residual add — applied on the accumulator before the single store.
#include "fusion/planner/rule_patterns.h"
#include "fusion/planner/rules.h"

namespace gaf {

std::shared_ptr<const FusionRule> make_matmul_epilogue_rule() {
  using patterns::activation;
  Pattern mm = Pattern("MatMul") | Pattern("Gemm");
  Pattern bias = Pattern("Add").with_const();
  Pattern scale = Pattern("Mul").with_const() | Pattern("Div").with_const();
  Pattern residual = Pattern("Add");
  Pattern p = (mm >> bias >> activation(2) >> residual) | (mm >> bias >> activation(2)) |
              (mm >> bias >> residual) | (mm >> bias) | (mm >> activation(1)) |
              (mm >> scale >> residual) | (mm >> scale);
  return std::make_shared<PatternRule>("matmul_epilogue", FusionKind::MatMulEpilogue,
                                       rule_priority::kMatMulEpilogue, p);
}

}  // namespace gaf
