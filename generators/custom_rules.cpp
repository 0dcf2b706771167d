#include "generators/custom_rules.h"

namespace gaf {

void register_fusion_rule(RuleRegistry& rules, const std::string& name, Pattern pattern, GenerateFn generate) {
  bool has_generate = static_cast<bool>(generate);
  rules.add(std::make_shared<CustomRule>(name, std::move(pattern), has_generate));  // throws first
  set_custom_algorithm(name, std::move(generate));
}

}  // namespace gaf
