// A rule plugin (engine/rule_plugin.h), loaded by `gaf ... --rules libgaf_gelu_rules.so`: one
// custom rule, `gelu_erf_fused`, that groups the decomposed erf-form GELU (Div, Erf, Add, Mul,
// Mul) before the built-in MatMul epilogue rule sees it, with a generate step computing the group
// as one expression. A group with a generate step is final, so the plan shows it on its own.
#include <algorithm>

#include "engine/rule_plugin.h"
#include "fusion/ops/math.h"
#include "fusion/planner/rule_patterns.h"
#include "generators/custom_rules.h"

using namespace gaf;

namespace {

std::vector<TensorFunc> generate_gelu(const std::vector<TensorFunc>& in, const Graph& g, const FusionGroup& grp) {
  // The group's one computed input is x; the others are the pattern's constants (sqrt 2, 1, 0.5).
  auto x_at =
      std::find_if(grp.inputs.begin(), grp.inputs.end(), [&](const std::string& v) { return !g.is_constant(v); });
  if (x_at == grp.inputs.end()) throw GafError("gelu_erf_fused: the group has no computed input");
  const TensorFunc& x = in[x_at - grp.inputs.begin()];
  return {define_tensor("gelu_erf_fused", x.dtype, x.shape,
                        [&](const std::vector<Halide::Var>& v) { return gelu_erf_f32(x(v)); })};
}

}  // namespace

extern "C" int gaf_plugin_abi_version() { return GAF_RULE_PLUGIN_ABI_VERSION; }

extern "C" void gaf_register_rules(RuleRegistry& rules) {
  register_fusion_rule(rules, "gelu_erf_fused", patterns::gelu_erf_decomposed(0), generate_gelu);
}
