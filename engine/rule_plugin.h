// Rule plugins: custom fusion rules in a shared library that `gaf --rules lib.so` (or any program
// using the Engine) loads at run time, without recompiling gaf. A plugin exports, with C linkage,
//
//   extern "C" int gaf_plugin_abi_version() { return GAF_RULE_PLUGIN_ABI_VERSION; }
//   extern "C" void gaf_register_rules(gaf::RuleRegistry& rules) {
//     gaf::register_fusion_rule(rules, "my_rule", gaf::Pattern("Erf") >> gaf::Pattern("Add"));
//   }
//
// and is linked against gaf's headers only (CMake: gaf::rule_plugin): its calls into gaf resolve
// to the loading executable's symbols, so the rule and its generate step land in that program's
// registries, not in a second copy inside the plugin.
#pragma once

#include <string>

#include "fusion/planner/rule.h"

// Raised whenever the types a plugin shares with gaf (RuleRegistry, Pattern, GenerateFn, ...)
// change layout; a plugin built against another version is refused.
#define GAF_RULE_PLUGIN_ABI_VERSION 1

namespace gaf {

// dlopens `path`, checks its gaf_plugin_abi_version and calls its gaf_register_rules on `rules`.
// GafError naming the file when it is missing, not a shared library, lacks either function, has
// another ABI version, or registers a rule whose name `rules` already has. The library stays
// loaded for the life of the process (its rules' code lives in it).
void load_rule_plugin(const std::string& path, RuleRegistry& rules);

}  // namespace gaf
