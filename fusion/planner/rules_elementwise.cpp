// Built-in rule 1: elementwise/broadcast chains of any length and fan-in — the connected pieces
// of elementwise and broadcast nodes still free after the higher-priority rules, cut where a
// computed value would be broadcast (inlining it there would recompute it per output element).
#include <functional>
#include <map>
#include <set>

#include "fusion/planner/group_info.h"
#include "fusion/planner/rules.h"

namespace gaf {

namespace {

class ElementwiseChainRule : public FusionRule {
 public:
  ElementwiseChainRule() : FusionRule("elementwise_chain", FusionKind::Elementwise, rule_priority::kElementwise) {}

  std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const override {
    auto eligible = [&](int n) {
      OpClass c = g.op_class(n);
      return available(n) && (c == OpClass::Elementwise || c == OpClass::Broadcast);
    };
    std::vector<int> parent(g.num_nodes());
    for (int i = 0; i < g.num_nodes(); ++i) parent[i] = i;
    std::function<int(int)> root = [&](int i) { return parent[i] == i ? i : parent[i] = root(parent[i]); };
    for (int n = 0; n < g.num_nodes(); ++n) {
      if (!eligible(n)) continue;
      for (const std::string& o : g.node(n).outputs) {
        if (o.empty() || g.is_graph_output(o)) continue;
        for (int c : g.consumers(o)) {
          if (!eligible(c)) continue;
          const std::string& co = g.node(c).outputs[0];
          if (value_bytes(g.graph(), o) < value_bytes(g.graph(), co) &&
              g.graph().value(o).type.dtype == g.graph().value(co).type.dtype)
            continue;  // broadcast of a computed value: keep it materialised
          parent[root(n)] = root(c);
        }
      }
    }
    std::map<int, std::vector<int>> comps;
    for (int n = 0; n < g.num_nodes(); ++n)
      if (eligible(n)) comps[root(n)].push_back(n);
    std::vector<RuleMatch> out;
    for (auto& [_, nodes] : comps)
      if (nodes.size() >= 2) out.push_back(RuleMatch{nodes});
    return out;
  }
};

}  // namespace

std::shared_ptr<const FusionRule> make_elementwise_chain_rule() { return std::make_shared<ElementwiseChainRule>(); }

}  // namespace gaf
