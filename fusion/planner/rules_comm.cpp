// Built-in rule 4 of the five kinds, communication + compute: an AllReduce, then (bias) →
// (Dropout) → residual Add → (a LayerNorm or RMSNorm over the last axis, in any spelling the
// normalization rules match). Each rank runs the bias, residual and norm on its own block of rows
// only, and the reduced rows go straight into them (generators/comm_kernel.h: the partial sums
// read from shared memory and added in that kernel, or a reduce-scatter before it and an
// all-gather after it).
#include <algorithm>
#include <optional>
#include <set>

#include "fusion/planner/group_info.h"
#include "fusion/planner/rules.h"
#include "fusion/planner/rules_comm.h"

namespace gaf {

int comm_row_split_axis(const Shape& reduced, int64_t ranks) {
  for (int64_t e : reduced)
    if (e == 0) return -1;  // nothing to split
  for (size_t a = 0; a + 1 < reduced.size(); ++a)
    if (reduced[a] > 1) return reduced[a] % ranks == 0 ? static_cast<int>(a) : -1;
  return -1;
}

namespace {

bool reduces_last_axis_only(const GraphView& g, int node) {
  const Node& n = g.node(node);
  if (n.inputs.empty() || n.inputs[0].empty()) return true;
  const int64_t rank = static_cast<int64_t>(g.graph().value(n.inputs[0]).type.dims.size());
  auto last = [&](int64_t a) { return a == -1 || a == rank - 1; };
  if (n.op_type == "LayerNormalization") return last(n.attrs.get_int("axis", -1));
  if (n.op_type.rfind("Reduce", 0) != 0) return true;
  std::vector<int64_t> axes = n.attrs.get_ints("axes", {});
  if (axes.empty() && n.inputs.size() > 1 && g.constant(n.inputs[1])) axes = g.constant(n.inputs[1])->to_int_vector();
  return axes.size() == 1 && last(axes[0]);
}

class CommComputeRule : public FusionRule {
 public:
  CommComputeRule()
      : FusionRule("comm_compute", FusionKind::CommCompute, rule_priority::kCommCompute),
        norms_{make_layernorm_decomposed_rule(), make_layernorm_moments_rule(), make_rmsnorm_decomposed_rule(),
               make_norm_op_rule()} {}

  // The kernel owns the collective's schedule: nothing else may grow into it.
  bool sealed() const override { return true; }
  std::string describe() const override {
    return name() + ": AllReduce >> [Add const] >> [Dropout] >> Add >> [LayerNorm | RMSNorm over the last axis]";
  }

  // Not a rewrite: the graph is left as it is. This hook runs once before grouping, which is
  // where the rule says why an AllReduce will run alone (the reason codes of the plan).
  void rewrite(Graph& g, const std::function<bool(const Node&)>& skipped, RewriteLog& log) const override {
    const GraphView v(g);
    std::vector<RuleMatch> norms;
    bool norms_found = false;
    for (int a = 0; a < v.num_nodes(); ++a) {
      if (v.node(a).op_type != "AllReduce" || skipped(v.node(a))) continue;
      if (!norms_found) {
        for (const auto& r : norms_) {
          auto all = [](int) { return true; };
          for (RuleMatch& m : r->find(v, all)) norms.push_back(std::move(m));
        }
        norms_found = true;
      }
      std::string why;
      match_at(
          v, a, [](int) { return true; }, norms, &why);
      if (!why.empty()) log.refused.push_back({ReasonCode::Shapes, why, name(), {v.node(a).name}});
    }
  }

  std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const override {
    std::vector<RuleMatch> out;
    std::vector<RuleMatch> norms;
    bool norms_found = false;
    for (int a = 0; a < g.num_nodes(); ++a) {
      if (g.node(a).op_type != "AllReduce" || !available(a)) continue;
      if (!norms_found) {  // only graphs with collectives pay for this
        for (const auto& r : norms_)
          for (RuleMatch& m : r->find(g, available)) norms.push_back(std::move(m));
        norms_found = true;
      }
      if (auto m = match_at(g, a, available, norms)) out.push_back(std::move(*m));
    }
    return out;
  }

 private:
  // The one consumer of `value` if it has exactly one and `value` is not a graph output.
  static int only_consumer(const GraphView& g, const std::string& value) {
    const auto& c = g.consumers(value);
    return c.size() == 1 && !g.is_graph_output(value) ? c[0] : -1;
  }

  // The group starting at AllReduce `a`; `refusal` (optional) gets a sentence when the rule
  // leaves it alone, or leaves out a norm, for a reason the user should see.
  std::optional<RuleMatch> match_at(const GraphView& g, int a, const std::function<bool(int)>& available,
                                    const std::vector<RuleMatch>& norms, std::string* refusal = nullptr) const {
    const Node& ar = g.node(a);
    const Shape full = g.graph().value(ar.outputs[0]).type.shape();
    const int64_t ranks = ar.attrs.get_int("group_size", 1);
    if (comm_row_split_axis(full, ranks) < 0) {
      if (refusal)
        *refusal = "AllReduce '" + ar.name + "' " + shape_str(full) + ": its rows do not split into " +
                   std::to_string(ranks) +
                   " equal blocks for a reduce-scatter; it runs alone, and the work after it "
                   "as kernels of their own";
      return std::nullopt;
    }
    std::vector<int> nodes{a};
    std::string cur = ar.outputs[0];
    auto step = [&](const std::function<bool(const Node&)>& ok) {
      const int c = only_consumer(g, cur);
      if (c < 0 || !available(c) || !ok(g.node(c))) return false;
      nodes.push_back(c);
      cur = g.node(c).outputs[0];
      return true;
    };
    auto other_input = [&](const Node& n) {
      return n.inputs.size() == 2 ? (n.inputs[0] == cur ? n.inputs[1] : n.inputs[0]) : "";
    };
    step([&](const Node& n) { return n.op_type == "Add" && g.constant(other_input(n)) != nullptr; });  // bias
    step([&](const Node& n) { return n.op_type == "Dropout" || n.op_type == "Identity"; });
    const bool residual = step([&](const Node& n) {
      const std::string r = other_input(n);
      return n.op_type == "Add" && !r.empty() && !g.constant(r) && g.graph().value(r).type.shape() == full;
    });
    if (!residual) return std::nullopt;  // an AllReduce with only a bias after it: nothing to save
    // The norm that reads the residual sum, whichever spelling matched it (the longest match:
    // with its scale and shift).
    const RuleMatch* best = nullptr;
    for (const RuleMatch& m : norms) {
      const std::set<int> inside(m.nodes.begin(), m.nodes.end());
      bool reads_only_cur = true, last_axis = true;
      for (int n : m.nodes) {
        last_axis = last_axis && reduces_last_axis_only(g, n);
        for (const std::string& in : g.node(n).inputs) {
          if (in.empty() || g.constant(in)) continue;
          const int p = g.producer(in);
          if (p >= 0 && inside.count(p)) continue;
          reads_only_cur = reads_only_cur && in == cur;
        }
      }
      if (reads_only_cur && !last_axis && refusal)
        *refusal = "AllReduce '" + ar.name + "': the norm from '" + g.node(m.nodes[0]).name +
                   "' reduces over more than the last axis, which splits across ranks after the reduce-scatter; "
                   "it is left out of the group";
      if (!reads_only_cur || !last_axis || std::count(nodes.begin(), nodes.end(), m.nodes[0])) continue;
      if (!best || m.nodes.size() > best->nodes.size()) best = &m;
    }
    if (best) nodes.insert(nodes.end(), best->nodes.begin(), best->nodes.end());
    return RuleMatch{nodes, {}};
  }

  std::vector<std::shared_ptr<const FusionRule>> norms_;
};

}  // namespace

std::shared_ptr<const FusionRule> make_comm_compute_rule() { return std::make_shared<CommComputeRule>(); }

}  // namespace gaf
