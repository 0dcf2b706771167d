// Built-in rule (MatMul + epilogue family): a gated MLP's first half as one group,
// act(x W_gate) * (x W_up) — Llama's SwiGLU (SiLU), GeGLU (GELU, erf or tanh), ReGLU, GLU
// (Sigmoid), quick-GELU. Both projections read the same rows of x and their products meet
// elementwise, so one kernel computes both for each panel of output columns and stores only the
// gated product: neither projection's output is written (M x FFN floats each). The schedule
// reads the roles Gate and Up (schedules/fused_schedule.cpp, tile_gated).
#include <algorithm>

#include "fusion/planner/rule_patterns.h"
#include "fusion/planner/rules.h"

namespace gaf {

namespace {

// The gating Mul's other operand: an up projection MatMul(x, W_up) over the gate's own x, with a
// constant W_up of W_gate's shape, read only by this Mul. Its node, or -1.
int up_projection(const GraphView& g, int gate_mul, int gate_mm, const std::string& activated) {
  const Node& mul = g.node(gate_mul);
  if (mul.inputs.size() != 2) return -1;
  const std::string& other = mul.inputs[0] == activated ? mul.inputs[1] : mul.inputs[0];
  const int up = g.producer(other);
  if (up < 0 || up == gate_mm || g.node(up).op_type != "MatMul" || g.node(up).inputs.size() != 2) return -1;
  const Node& gate = g.node(gate_mm);
  if (g.node(up).inputs[0] != gate.inputs[0]) return -1;
  const Tensor* wg = g.constant(gate.inputs[1]);
  const Tensor* wu = g.constant(g.node(up).inputs[1]);
  if (!wg || !wu || wg->shape() != wu->shape()) return -1;
  if (g.consumers(other).size() != 1 || g.is_graph_output(other)) return -1;
  return up;
}

class GatedMlpRule : public FusionRule {
 public:
  GatedMlpRule() : FusionRule("gated_mlp", FusionKind::MatMulEpilogue, rule_priority::kMatMulEpilogue + 20) {
    set_kernel_label("GatedMLP");
    Pattern mm = Pattern("MatMul").with_const();
    mm.as(MemberRole::Gate);
    Pattern gate_mul = Pattern("Mul").where([](const GraphView& g, int node, const PatternMatch& so_far) {
      return up_projection(g, node, so_far.nodes.front(), g.node(so_far.nodes.back()).outputs[0]) >= 0;
    });
    // SiLU: x * Sigmoid(x); quick-GELU: x * Sigmoid(1.702 x).
    Pattern silu = Pattern("Sigmoid") >> Pattern("Mul").where(patterns::reads_step(0));
    Pattern quick_gelu =
        Pattern("Mul").with_const(1.702, 1e-3) >> Pattern("Sigmoid") >> Pattern("Mul").where(patterns::reads_step(0));
    pattern_ = (mm >> silu >> gate_mul) | (mm >> quick_gelu >> gate_mul) | (mm >> patterns::activation(1) >> gate_mul);
  }

  std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const override {
    std::vector<RuleMatch> out;
    for (const PatternMatch& m : pattern_.match_all(g)) {
      const int mul = m.nodes.back();
      const int up = up_projection(g, mul, m.nodes.front(), g.node(m.nodes[m.nodes.size() - 2]).outputs[0]);
      RuleMatch r{m.nodes, m.roles};
      r.nodes.push_back(up);
      r.roles[MemberRole::Up] = up;
      if (std::all_of(r.nodes.begin(), r.nodes.end(), available)) out.push_back(r);
    }
    return out;
  }
  std::string describe() const override { return name() + ": " + pattern_.str() + " * MatMul(x, W_up)"; }

 private:
  Pattern pattern_ = Pattern("MatMul");
};

}  // namespace

std::shared_ptr<const FusionRule> make_gated_mlp_rule() { return std::make_shared<GatedMlpRule>(); }

}  // namespace gaf
