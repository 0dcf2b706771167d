// A small pattern DSL over the graph, in the spirit of the seed's Python:
//   Pattern("MatMul") >> Pattern("Add").with_const() >> (Pattern("Relu") | Pattern("Gelu"))
// A pattern is one or more alternative chains; each step of a chain consumes the output of the
// step before it (at any operand: ONNX's Add/Mul are commutative, and a rule that cares about
// the position adds a predicate). A step matches by op type, by op class, or anything, and may
// require a constant operand (optionally close to a value: eps, 0.5, sqrt 2) and predicates.
// Values produced inside a match must be consumed only inside it (unless allow_fanout(), or, for
// one step's value, may_leave()).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/ops/registry.h"
#include "fusion/planner/plan.h"

namespace gaf {

// Read-only view of a graph with consumer lists, built once per planning run.
class GraphView {
 public:
  explicit GraphView(const Graph& g);
  const Graph& graph() const { return g_; }
  const Node& node(int i) const { return g_.nodes()[i]; }
  int num_nodes() const { return static_cast<int>(g_.nodes().size()); }
  int producer(const std::string& value) const;  // -1 for inputs / constants
  const std::vector<int>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;
  OpClass op_class(int node) const;
  const Tensor* constant(const std::string& value) const;  // null unless constant
  // The value as a scalar if it is a constant whose elements are all equal.
  std::optional<double> scalar_constant(const std::string& value) const;
  const std::vector<int>& topo_order() const { return topo_; }
  int topo_position(int node) const { return topo_pos_[node]; }

 private:
  const Graph& g_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::vector<int> topo_, topo_pos_;
  std::vector<OpClass> classes_;
  std::vector<int> empty_;
};

struct PatternMatch {
  std::vector<int> nodes;           // one node per step, in chain order
  std::map<MemberRole, int> roles;  // the nodes of the steps marked with as()
};

class Pattern {
 public:
  using Predicate = std::function<bool(const GraphView&, int node, const PatternMatch& so_far)>;

  Pattern(const char* op_type);         // NOLINT(google-explicit-constructor): reads like the seed
  Pattern(const std::string& op_type);  // NOLINT(google-explicit-constructor)
  static Pattern of_class(OpClass c);
  static Pattern any();

  // Some operand other than the chain's input is a constant; with a value, a scalar constant
  // within `rel_tol` of it.
  Pattern& with_const(std::optional<double> value = std::nullopt, double rel_tol = 1e-4);
  Pattern& where(Predicate p);
  Pattern& allow_fanout();
  // The value this step produces may also be read outside the match (the group then writes it as
  // one more output); the other steps' values still stay inside.
  Pattern& may_leave();
  // The node this step matches plays `role` in the group (FusionGroup::roles): schedules read it.
  Pattern& as(MemberRole role);

  Pattern operator>>(const Pattern& next) const;
  Pattern operator|(const Pattern& alt) const;

  // Every match in the graph (chains ending at each node, tried in topological order).
  std::vector<PatternMatch> match_all(const GraphView& g) const;
  // Matches whose last node is `anchor`.
  std::vector<PatternMatch> match_at(const GraphView& g, int anchor) const;
  std::string str() const;

 private:
  struct Step {
    std::string op_type;  // "" = not by type
    std::optional<OpClass> op_class;
    bool any = false;
    bool needs_const = false;
    std::optional<double> const_value;
    double rel_tol = 1e-4;
    std::vector<Predicate> predicates;
    std::optional<MemberRole> role;
    bool may_leave = false;
    bool kind_matches(const GraphView& g, int node) const;
    bool checks_pass(const GraphView& g, int node, const std::string& chain_input, const PatternMatch& so_far) const;
    std::string str() const;
  };
  using Chain = std::vector<Step>;
  Pattern() = default;
  void collect(const GraphView& g, const Chain& c, int step, int node, std::vector<int>& rev,
               std::vector<std::vector<int>>& out) const;
  bool verify(const GraphView& g, const Chain& c, const std::vector<int>& nodes) const;
  Step& last();
  std::vector<Chain> chains_;
  bool fanout_ = false;
};

}  // namespace gaf
