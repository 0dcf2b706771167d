#include "fusion/planner/pattern.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace gaf {

GraphView::GraphView(const Graph& g) : g_(g) {
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs)
      if (!o.empty()) producer_[o] = static_cast<int>(i);
    for (const std::string& in : nodes[i].inputs)
      if (!in.empty()) {
        auto& c = consumers_[in];
        if (c.empty() || c.back() != static_cast<int>(i)) c.push_back(static_cast<int>(i));
      }
    const OpSchema* s = OpRegistry::global().find(nodes[i].op_type);
    classes_.push_back(s ? s->op_class : OpClass::Opaque);
  }
  topo_ = g.topological_order();
  topo_pos_.assign(nodes.size(), 0);
  for (size_t k = 0; k < topo_.size(); ++k) topo_pos_[topo_[k]] = static_cast<int>(k);
}

int GraphView::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphView::consumers(const std::string& value) const {
  auto it = consumers_.find(value);
  return it == consumers_.end() ? empty_ : it->second;
}

bool GraphView::is_graph_output(const std::string& value) const {
  const auto& o = g_.outputs();
  return std::find(o.begin(), o.end(), value) != o.end();
}

OpClass GraphView::op_class(int node) const { return classes_[node]; }

const Tensor* GraphView::constant(const std::string& value) const { return g_.constant(value); }

std::optional<double> GraphView::scalar_constant(const std::string& value) const {
  const Tensor* t = constant(value);
  if (!t || t->numel() == 0) return std::nullopt;
  double first = t->as_double(0);
  for (int64_t i = 1; i < t->numel(); ++i)
    if (t->as_double(i) != first) return std::nullopt;
  return first;
}

// ---- Pattern ----------------------------------------------------------------------------------

Pattern::Pattern(const char* op_type) : Pattern(std::string(op_type)) {}
Pattern::Pattern(const std::string& op_type) {
  Step s;
  s.op_type = op_type;
  chains_.push_back({s});
}

Pattern Pattern::of_class(OpClass c) {
  Pattern p;
  Step s;
  s.op_class = c;
  p.chains_.push_back({s});
  return p;
}

Pattern Pattern::any() {
  Pattern p;
  Step s;
  s.any = true;
  p.chains_.push_back({s});
  return p;
}

Pattern::Step& Pattern::last() { return chains_.back().back(); }

Pattern& Pattern::with_const(std::optional<double> value, double rel_tol) {
  for (Chain& c : chains_) {
    c.back().needs_const = true;
    c.back().const_value = value;
    c.back().rel_tol = rel_tol;
  }
  return *this;
}

Pattern& Pattern::where(Predicate p) {
  for (Chain& c : chains_) c.back().predicates.push_back(p);
  return *this;
}

Pattern& Pattern::as(MemberRole role) {
  for (Chain& c : chains_) c.back().role = role;
  return *this;
}

Pattern& Pattern::may_leave() {
  for (Chain& c : chains_) c.back().may_leave = true;
  return *this;
}

Pattern& Pattern::allow_fanout() {
  fanout_ = true;
  return *this;
}

Pattern Pattern::operator>>(const Pattern& next) const {
  Pattern p;
  p.fanout_ = fanout_ || next.fanout_;
  for (const Chain& a : chains_)
    for (const Chain& b : next.chains_) {
      Chain c = a;
      c.insert(c.end(), b.begin(), b.end());
      p.chains_.push_back(c);
    }
  return p;
}

Pattern Pattern::operator|(const Pattern& alt) const {
  Pattern p = *this;
  p.fanout_ = fanout_ || alt.fanout_;
  p.chains_.insert(p.chains_.end(), alt.chains_.begin(), alt.chains_.end());
  return p;
}

bool Pattern::Step::kind_matches(const GraphView& g, int node) const {
  if (any) return true;
  if (!op_type.empty() && g.node(node).op_type != op_type) return false;
  if (op_class && g.op_class(node) != *op_class) return false;
  return true;
}

bool Pattern::Step::checks_pass(const GraphView& g, int node, const std::string& chain_input,
                                const PatternMatch& so_far) const {
  const Node& n = g.node(node);
  if (needs_const) {
    bool found = false;
    for (const std::string& in : n.inputs) {
      if (in.empty() || in == chain_input) continue;
      if (!const_value) {
        found = found || g.constant(in) != nullptr;
        continue;
      }
      std::optional<double> v = g.scalar_constant(in);
      if (v && std::fabs(*v - *const_value) <= rel_tol * std::max(1e-30, std::fabs(*const_value))) found = true;
    }
    if (!found) return false;
  }
  for (const Predicate& p : predicates)
    if (!p(g, node, so_far)) return false;
  return true;
}

// Backward search from the last step: candidate node sequences by kind and data flow only.
void Pattern::collect(const GraphView& g, const Chain& c, int step, int node, std::vector<int>& rev,
                      std::vector<std::vector<int>>& out) const {
  if (!c[step].kind_matches(g, node)) return;
  if (std::find(rev.begin(), rev.end(), node) != rev.end()) return;
  rev.push_back(node);
  if (step == 0) {
    out.emplace_back(rev.rbegin(), rev.rend());
  } else {
    std::set<int> tried;
    for (const std::string& in : g.node(node).inputs) {
      int p = g.producer(in);
      if (p >= 0 && tried.insert(p).second) collect(g, c, step - 1, p, rev, out);
    }
  }
  rev.pop_back();
}

// Forward check of one candidate: constants, predicates, and (unless fan-out is allowed) that
// values produced inside the match are read only inside it.
bool Pattern::verify(const GraphView& g, const Chain& c, const std::vector<int>& nodes) const {
  PatternMatch so_far;
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::string chain_input;
    if (k > 0)
      for (const std::string& o : g.node(nodes[k - 1]).outputs)
        for (const std::string& in : g.node(nodes[k]).inputs)
          if (!o.empty() && o == in) chain_input = o;
    if (!c[k].checks_pass(g, nodes[k], chain_input, so_far)) return false;
    so_far.nodes.push_back(nodes[k]);
  }
  if (fanout_) return true;
  std::set<int> inside(nodes.begin(), nodes.end());
  for (size_t k = 0; k + 1 < nodes.size(); ++k) {
    if (c[k].may_leave) continue;
    for (const std::string& o : g.node(nodes[k]).outputs) {
      if (o.empty()) continue;
      if (g.is_graph_output(o)) return false;
      for (int cons : g.consumers(o))
        if (!inside.count(cons)) return false;
    }
  }
  return true;
}

std::vector<PatternMatch> Pattern::match_at(const GraphView& g, int anchor) const {
  std::vector<PatternMatch> out;
  for (const Chain& c : chains_) {
    std::vector<int> rev;
    std::vector<std::vector<int>> candidates;
    collect(g, c, static_cast<int>(c.size()) - 1, anchor, rev, candidates);
    for (const auto& nodes : candidates) {
      if (!verify(g, c, nodes)) continue;
      PatternMatch m{nodes, {}};
      for (size_t k = 0; k < c.size(); ++k)
        if (c[k].role) m.roles[*c[k].role] = nodes[k];
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::vector<PatternMatch> Pattern::match_all(const GraphView& g) const {
  std::vector<PatternMatch> out;
  for (int n : g.topo_order()) {
    std::vector<PatternMatch> m = match_at(g, n);
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

std::string Pattern::Step::str() const {
  std::string s = any ? "*" : !op_type.empty() ? op_type : std::string("<") + op_class_name(*op_class) + ">";
  if (needs_const) s += const_value ? "(const " + std::to_string(*const_value) + ")" : "(const)";
  return s;
}

std::string Pattern::str() const {
  std::string s;
  for (const Chain& c : chains_) {
    if (!s.empty()) s += " | ";
    for (size_t i = 0; i < c.size(); ++i) s += (i ? " >> " : "") + c[i].str();
  }
  return s;
}

}  // namespace gaf
