#include "fusion/planner/rule_patterns.h"

#include <cmath>

namespace gaf::patterns {

Pattern::Predicate reads_step(int step) {
  return [step](const GraphView& g, int node, const PatternMatch& m) {
    if (step >= static_cast<int>(m.nodes.size())) return false;
    const std::string& v = g.node(m.nodes[step]).outputs[0];
    for (const std::string& in : g.node(node).inputs)
      if (in == v) return true;
    return false;
  };
}

Pattern::Predicate reads_input_of_step(int step, int input) {
  return [step, input](const GraphView& g, int node, const PatternMatch& m) {
    if (step >= static_cast<int>(m.nodes.size())) return false;
    const Node& s = g.node(m.nodes[step]);
    if (input >= static_cast<int>(s.inputs.size())) return false;
    for (const std::string& in : g.node(node).inputs)
      if (in == s.inputs[input]) return true;
    return false;
  };
}

Pattern::Predicate squares() {
  return [](const GraphView& g, int node, const PatternMatch&) {
    const Node& n = g.node(node);
    return n.inputs.size() == 2 && n.inputs[0] == n.inputs[1];
  };
}

Pattern::Predicate same_reduction_as(int step) {
  return [step](const GraphView& g, int node, const PatternMatch& m) {
    if (step >= static_cast<int>(m.nodes.size())) return false;
    const Attributes& a = g.node(m.nodes[step]).attrs;
    const Attributes& b = g.node(node).attrs;
    return a.get_ints("axes", {}) == b.get_ints("axes", {}) && a.get_int("keepdims", 1) == b.get_int("keepdims", 1) &&
           g.node(node).inputs.size() == g.node(m.nodes[step]).inputs.size();
  };
}

Pattern gelu_erf_decomposed(int s) {
  const double sqrt2 = std::sqrt(2.0);
  Pattern head = Pattern("Div").with_const(sqrt2) | Pattern("Mul").with_const(1.0 / sqrt2);
  Pattern core = head >> Pattern("Erf") >> Pattern("Add").with_const(1.0);
  // x * (1 + erf) * 0.5, or (x * 0.5) * (1 + erf) where x*0.5 is outside the chain.
  return (core >> Pattern("Mul").where(reads_input_of_step(s, 0)) >> Pattern("Mul").with_const(0.5)) |
         (core >> Pattern("Mul").with_const(0.5) >> Pattern("Mul").where(reads_input_of_step(s, 0))) |
         (core >> Pattern("Mul"));
}

Pattern gelu_tanh_decomposed(int s) {
  // x^3 as Pow(x, 3), or as x * (x * x) (torch's gelu(approximate="tanh") exports it so).
  Pattern cube = Pattern("Pow").with_const(3.0) |
                 (Pattern("Mul").where(squares()) >> Pattern("Mul").where(reads_input_of_step(s, 0)));
  Pattern core = cube >> Pattern("Mul").with_const(0.044715) >> Pattern("Add").where(reads_input_of_step(s, 0)) >>
                 Pattern("Mul").with_const(std::sqrt(2.0 / M_PI), 1e-3) >> Pattern("Tanh") >>
                 Pattern("Add").with_const(1.0);
  return (core >> Pattern("Mul").where(reads_input_of_step(s, 0)) >> Pattern("Mul").with_const(0.5)) |
         (core >> Pattern("Mul"));
}

Pattern attention_mask() {
  Pattern where = Pattern("Where").where([](const GraphView& g, int node, const PatternMatch& so_far) {
    const Node& w = g.node(node);
    const std::string& scores = g.node(so_far.nodes.back()).outputs[0];
    return w.inputs.size() == 3 && w.inputs[0] != scores && (w.inputs[1] == scores || w.inputs[2] == scores);
  });
  return Pattern("Add") | where;
}

Pattern attention_masks() {
  Pattern m = attention_mask();
  return (m >> m >> m) | (m >> m) | m;
}

Pattern activation(int s) {
  return Pattern("Relu") | Pattern("Gelu") | Pattern("Sigmoid") | Pattern("Tanh") | Pattern("LeakyRelu") |
         gelu_erf_decomposed(s) | gelu_tanh_decomposed(s);
}

}  // namespace gaf::patterns
