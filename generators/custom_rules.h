// The public custom-fusion API (docs/CUSTOM_RULES.md), the C++ form of the seed's
//   @register_fusion("CustomOp", "ReLU") class ...: pattern(), generate()
// A rule is a name, a Pattern and optionally a generate step returning the fused group's
// algorithm as Halide Funcs; without one the group composes its members' own algorithms.
#pragma once

#include <string>

#include "fusion/planner/custom_rule.h"
#include "generators/custom_algorithm.h"

namespace gaf {

// Adds a CustomRule (FusionKind::Custom, rule_priority::kUser) to `rules` and records the generate
// step under `name` for compile_group_kernel. Throws GafError if `rules` already has the name.
void register_fusion_rule(RuleRegistry& rules, const std::string& name, Pattern pattern, GenerateFn generate = {});

}  // namespace gaf
