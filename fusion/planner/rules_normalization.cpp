// Built-in rule 3: normalizations as one group with per-row statistics — LayerNormalization,
// Softmax, LogSoftmax, BatchNormalization as single ops, and the decomposed forms exporters
// write: LayerNorm (ReduceMean/Sub/Pow|Mul/ReduceMean/Add eps/Sqrt/Div|Reciprocal+Mul, with
// optional gamma/beta), RMSNorm, Softmax (ReduceMax/Sub/Exp/ReduceSum/Div, or without the max),
// GroupNorm (Reshape/InstanceNormalization/Reshape with its affine tail).
#include "fusion/planner/rule_patterns.h"
#include "fusion/planner/rules.h"

#include <algorithm>

namespace gaf {

namespace {

using namespace patterns;

Pattern square(int input_step) {
  (void)input_step;
  return Pattern("Pow").with_const(2.0) | Pattern("Mul").where(squares());
}

// x / sqrt(var + eps) as Div, or as Reciprocal then Mul; `numer_step` produced the numerator.
Pattern scale_by_inverse_std(Pattern::Predicate reads_numerator) {
  return Pattern("Div").where(reads_numerator) | (Pattern("Reciprocal") >> Pattern("Mul").where(reads_numerator));
}

Pattern with_affine_tail(const Pattern& core) {
  Pattern gamma = Pattern("Mul").with_const();
  Pattern beta = Pattern("Add").with_const();
  return (core >> gamma >> beta) | (core >> gamma) | core;
}

}  // namespace

namespace patterns {

Pattern layernorm_decomposed(int first) {
  // steps: first ReduceMean(x), +1 Sub(x, mean), +2 square, +3 ReduceMean, +4 Add eps, +5 Sqrt,
  // +6.. scale, then the optional gamma and beta
  Pattern core = Pattern("ReduceMean") >> Pattern("Sub").where(reads_input_of_step(first, 0)) >> square(first + 1) >>
                 Pattern("ReduceMean").where(same_reduction_as(first)) >> Pattern("Add").with_const() >>
                 Pattern("Sqrt") >> scale_by_inverse_std(reads_step(first + 1));
  return with_affine_tail(core);
}

Pattern rmsnorm_decomposed(int first) {
  // steps: first square(x), +1 ReduceMean, +2 Add eps, +3 Sqrt, +4.. x * 1/rms, then the optional gamma
  Pattern core = square(first) >> Pattern("ReduceMean") >> Pattern("Add").with_const() >> Pattern("Sqrt") >>
                 scale_by_inverse_std(reads_input_of_step(first, 0));
  return (core >> Pattern("Mul").with_const()) | core;
}

}  // namespace patterns

std::shared_ptr<const FusionRule> make_layernorm_decomposed_rule() {
  auto rule = std::make_shared<PatternRule>("layernorm_decomposed", FusionKind::Normalization,
                                            rule_priority::kNormalization, layernorm_decomposed(0));
  rule->set_kernel_label("LayerNorm");
  return rule;
}

std::shared_ptr<const FusionRule> make_rmsnorm_decomposed_rule() {
  auto rule = std::make_shared<PatternRule>("rmsnorm_decomposed", FusionKind::Normalization,
                                            rule_priority::kNormalization, rmsnorm_decomposed(0));
  rule->set_kernel_label("RMSNorm");
  return rule;
}

std::shared_ptr<const FusionRule> make_softmax_decomposed_rule() {
  Pattern stable = Pattern("ReduceMax") >> Pattern("Sub").where(reads_input_of_step(0, 0)) >> Pattern("Exp") >>
                   Pattern("ReduceSum") >> Pattern("Div").where(reads_step(2));
  Pattern plain = Pattern("Exp") >> Pattern("ReduceSum") >> Pattern("Div").where(reads_step(0));
  // LogSoftmax expanded: x - max - log(sum(exp(x - max)))
  Pattern log_stable = Pattern("ReduceMax") >> Pattern("Sub").where(reads_input_of_step(0, 0)) >> Pattern("Exp") >>
                       Pattern("ReduceSum") >> Pattern("Log") >> Pattern("Sub").where(reads_step(1));
  return std::make_shared<PatternRule>("softmax_decomposed", FusionKind::Normalization, rule_priority::kNormalization,
                                       stable | log_stable | plain);
}

namespace {

// LayerNorm written with moments, as ONNX's own function expansion does: var = E[x^2] - E[x]^2.
// Not a chain (x feeds three branches), so it is matched from the Div backwards in code.
class MomentsLayerNormRule : public FusionRule {
 public:
  MomentsLayerNormRule() : FusionRule("layernorm_moments", FusionKind::Normalization, rule_priority::kNormalization) {
    set_kernel_label("LayerNorm");
  }

  std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const override {
    std::vector<RuleMatch> out;
    for (int d = 0; d < g.num_nodes(); ++d) {
      std::vector<int> nodes;
      if (match_at(g, d, nodes) && std::all_of(nodes.begin(), nodes.end(), available)) out.push_back(RuleMatch{nodes});
    }
    return out;
  }

 private:
  // Producer of input `i` of `node` if it is an `op` node, else -1.
  static int producer(const GraphView& g, int node, size_t i, const char* op) {
    const Node& n = g.node(node);
    if (i >= n.inputs.size()) return -1;
    int p = g.producer(n.inputs[i]);
    return p >= 0 && g.node(p).op_type == op ? p : -1;
  }
  static bool same_inputs(const Node& n) { return n.inputs.size() == 2 && n.inputs[0] == n.inputs[1]; }

  static bool match_at(const GraphView& g, int div, std::vector<int>& nodes) {
    if (g.node(div).op_type != "Div") return false;
    int dev = producer(g, div, 0, "Sub"), sd = producer(g, div, 1, "Sqrt");
    if (dev < 0 || sd < 0) return false;
    int mean = producer(g, dev, 1, "ReduceMean");
    int veps = producer(g, sd, 0, "Add");
    if (mean < 0 || veps < 0 || !g.constant(g.node(veps).inputs[1])) return false;
    const std::string& x = g.node(dev).inputs[0];
    if (g.node(mean).inputs[0] != x) return false;
    int var = producer(g, veps, 0, "Sub");
    if (var < 0) return false;
    int ms = producer(g, var, 0, "ReduceMean"), sm = producer(g, var, 1, "Mul");
    if (ms < 0 || sm < 0 || !same_inputs(g.node(sm)) || g.node(sm).inputs[0] != g.node(mean).outputs[0]) return false;
    int sq = producer(g, ms, 0, "Mul");
    if (sq < 0 || !same_inputs(g.node(sq)) || g.node(sq).inputs[0] != x) return false;
    nodes = {mean, sq, ms, sm, var, veps, sd, dev, div};
    return true;
  }
};

}  // namespace

std::shared_ptr<const FusionRule> make_layernorm_moments_rule() { return std::make_shared<MomentsLayerNormRule>(); }

// GroupNorm as torch exports it (opset 17): the channels viewed as [N, groups, -1], normalized per
// group by InstanceNormalization (unit scale, zero bias), viewed back, then the per-channel gamma
// and beta. One row schedule: statistics per (image, group), the affine tail on each element.
std::shared_ptr<const FusionRule> make_group_norm_rule() {
  Pattern core = Pattern("Reshape") >> Pattern("InstanceNormalization") >> Pattern("Reshape");
  auto rule = std::make_shared<PatternRule>("group_norm", FusionKind::Normalization, rule_priority::kNormalization,
                                            with_affine_tail(core));
  rule->set_kernel_label("GroupNorm");
  return rule;
}

std::shared_ptr<const FusionRule> make_norm_op_rule() {
  Pattern p =
      Pattern("LayerNormalization") | Pattern("Softmax") | Pattern("LogSoftmax") | Pattern("BatchNormalization");
  return std::make_shared<PatternRule>("norm_op", FusionKind::Normalization, rule_priority::kNormalization - 1, p);
}

}  // namespace gaf
