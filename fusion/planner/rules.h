// Factories of the built-in rules (one file each); RuleRegistry::builtin() registers them.
#pragma once

#include <memory>

#include "fusion/planner/rule.h"

namespace gaf {

std::shared_ptr<const FusionRule> make_elementwise_chain_rule();     // rules_elementwise.cpp
std::shared_ptr<const FusionRule> make_matmul_epilogue_rule();       // rules_matmul_epilogue.cpp
std::shared_ptr<const FusionRule> make_attention_scores_rule();      // rules_matmul_epilogue.cpp
std::shared_ptr<const FusionRule> make_attention_rule();             // rules_matmul_epilogue.cpp
std::shared_ptr<const FusionRule> make_matmul_layernorm_rule();      // rules_matmul_epilogue.cpp
std::shared_ptr<const FusionRule> make_gated_mlp_rule();             // rules_gated_mlp.cpp
std::shared_ptr<const FusionRule> make_layernorm_decomposed_rule();  // rules_normalization.cpp
std::shared_ptr<const FusionRule> make_layernorm_moments_rule();
std::shared_ptr<const FusionRule> make_rmsnorm_decomposed_rule();
std::shared_ptr<const FusionRule> make_softmax_decomposed_rule();
std::shared_ptr<const FusionRule> make_group_norm_rule();
std::shared_ptr<const FusionRule> make_norm_op_rule();
std::shared_ptr<const FusionRule> make_batchnorm_fold_rule();  // batchnorm_fold.cpp (a rewrite)

}  // namespace gaf
