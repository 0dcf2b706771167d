#include "fusion/planner/rule.h"

#include <algorithm>

#include "fusion/planner/horizontal.h"
#include "fusion/planner/rules.h"
#include "fusion/planner/rules_comm.h"

namespace gaf {

std::vector<RuleMatch> PatternRule::find(const GraphView& g, const std::function<bool(int)>& available) const {
  std::vector<RuleMatch> out;
  for (const PatternMatch& m : pattern_.match_all(g)) {
    bool free = std::all_of(m.nodes.begin(), m.nodes.end(), available);
    if (free) out.push_back(RuleMatch{m.nodes, m.roles});
  }
  return out;
}

RuleRegistry RuleRegistry::builtin() {
  RuleRegistry r;
  r.add(make_layernorm_decomposed_rule());
  r.add(make_layernorm_moments_rule());
  r.add(make_rmsnorm_decomposed_rule());
  r.add(make_softmax_decomposed_rule());
  r.add(make_group_norm_rule());
  r.add(make_norm_op_rule());
  r.add(make_batchnorm_fold_rule());
  r.add(make_horizontal_matmul_rule());
  r.add(make_matmul_epilogue_rule());
  r.add(make_attention_rule());
  r.add(make_attention_scores_rule());
  r.add(make_matmul_layernorm_rule());
  r.add(make_gated_mlp_rule());
  r.add(make_comm_compute_rule());
  r.add(make_elementwise_chain_rule());
  return r;
}

void RuleRegistry::add(std::shared_ptr<const FusionRule> rule) {
  if (find(rule->name())) throw GafError("fusion rule '" + rule->name() + "' is registered twice");
  rules_.push_back(std::move(rule));
}

std::vector<std::shared_ptr<const FusionRule>> RuleRegistry::ordered() const {
  auto r = rules_;
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a->priority() > b->priority(); });
  return r;
}

const FusionRule* RuleRegistry::find(const std::string& name) const {
  for (const auto& r : rules_)
    if (r->name() == name) return r.get();
  return nullptr;
}

std::vector<std::string> RuleRegistry::names() const {
  std::vector<std::string> n;
  for (const auto& r : ordered()) n.push_back(r->name());
  return n;
}

}  // namespace gaf
