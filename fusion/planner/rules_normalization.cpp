// Built-in rule 3: normalizations as one group with per-row statistics — LayerNormalization,
// Softmax, LogSoftmax, BatchNormalization as single ops, and the decomposed forms exporters
// write: LayerNorm (ReduceMean/Sub/Pow|Mul/ReduceMean/Add eps/Sqrt/Div|Reciprocal+Mul, with
// optional gamma/beta), RMSNorm, Softmax (ReduceMax/Sub/Exp/ReduceSum/Div, or without the max).
#include "fusion/planner/rule_patterns.h"
#include "fusion/planner/rules.h"

namespace gaf {

namespace {

using namespace patterns;

Pattern square(int input_step) {
  (void)input_step;
  return Pattern("Pow").with_const(2.0) | Pattern("Mul").where(squares());
}

// x / sqrt(var + eps) as Div, or as Reciprocal then Mul; `numer_step` produced the numerator.
Pattern scale_by_inverse_std(Pattern::Predicate reads_numerator) {
  return Pattern("Div").where(reads_numerator) |
         (Pattern("Reciprocal") >> Pattern("Mul").where(reads_numerator));
}

Pattern with_affine_tail(const Pattern& core) {
  Pattern gamma = Pattern("Mul").with_const();
  Pattern beta = Pattern("Add").with_const();
  return (core >> gamma >> beta) | (core >> gamma) | core;
}

}  // namespace

std::shared_ptr<const FusionRule> make_layernorm_decomposed_rule() {
  // steps: 0 ReduceMean(x), 1 Sub(x, mean), 2 square, 3 ReduceMean, 4 Add eps, 5 Sqrt, 6.. scale
  Pattern core = Pattern("ReduceMean") >>
                 Pattern("Sub").where(reads_input_of_step(0, 0)) >> square(1) >>
                 Pattern("ReduceMean").where(same_reduction_as(0)) >> Pattern("Add").with_const() >>
                 Pattern("Sqrt") >> scale_by_inverse_std(reads_step(1));
  return std::make_shared<PatternRule>("layernorm_decomposed", FusionKind::Normalization,
                                       rule_priority::kNormalization, with_affine_tail(core));
}

std::shared_ptr<const FusionRule> make_rmsnorm_decomposed_rule() {
  // steps: 0 square(x), 1 ReduceMean, 2 Add eps, 3 Sqrt, 4.. x * 1/rms
  Pattern core = square(0) >> Pattern("ReduceMean") >> Pattern("Add").with_const() >>
                 Pattern("Sqrt") >> scale_by_inverse_std(reads_input_of_step(0, 0));
  Pattern gamma = Pattern("Mul").with_const();
  return std::make_shared<PatternRule>("rmsnorm_decomposed", FusionKind::Normalization,
                                       rule_priority::kNormalization, (core >> gamma) | core);
}

std::shared_ptr<const FusionRule> make_softmax_decomposed_rule() {
  Pattern stable = Pattern("ReduceMax") >> Pattern("Sub").where(reads_input_of_step(0, 0)) >>
                   Pattern("Exp") >> Pattern("ReduceSum") >> Pattern("Div").where(reads_step(2));
  Pattern plain = Pattern("Exp") >> Pattern("ReduceSum") >> Pattern("Div").where(reads_step(0));
  // LogSoftmax expanded: x - max - log(sum(exp(x - max)))
  Pattern log_stable = Pattern("ReduceMax") >> Pattern("Sub").where(reads_input_of_step(0, 0)) >>
                       Pattern("Exp") >> Pattern("ReduceSum") >> Pattern("Log") >>
                       Pattern("Sub").where(reads_step(1));
  return std::make_shared<PatternRule>("softmax_decomposed", FusionKind::Normalization,
                                       rule_priority::kNormalization, stable | log_stable | plain);
}

std::shared_ptr<const FusionRule> make_norm_op_rule() {
  Pattern p = Pattern("LayerNormalization") | Pattern("Softmax") | Pattern("LogSoftmax") |
              Pattern("BatchNormalization");
  return std::make_shared<PatternRule>("norm_op", FusionKind::Normalization,
                                       rule_priority::kNormalization - 1, p);
}

}  // namespace gaf
