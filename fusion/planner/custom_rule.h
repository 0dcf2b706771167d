// Built-in rule 5, the public one: a user's pattern forming a FusionKind::Custom group at user
// priority (before every built-in rule). Halide-free; the optional generate step lives in
// generators/custom_algorithm.h and the call users make is in generators/custom_rules.h.
#pragma once

#include "fusion/planner/rule.h"

namespace gaf {

class CustomRule : public PatternRule {
 public:
  // `has_generate`: the group's algorithm is the user's generate step, which computes exactly the
  // matched nodes, so generic grouping must not grow the group afterwards.
  CustomRule(std::string name, Pattern p, bool has_generate = false)
      : PatternRule(std::move(name), FusionKind::Custom, rule_priority::kUser, std::move(p)),
        has_generate_(has_generate) {
    set_kernel_label(this->name());  // reports name a custom group by its rule
  }
  bool sealed() const override { return has_generate_; }

 private:
  bool has_generate_;
};

}  // namespace gaf
