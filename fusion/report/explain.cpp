#include "fusion/report/explain.h"

#include <set>
#include <sstream>

#include "fusion/ops/registry.h"
#include "fusion/report/report.h"

namespace gaf {

namespace {

int find_exact(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].name == name) return static_cast<int>(i);
  return -1;
}

// The node named `name`, or the only node whose name contains it; error otherwise.
std::string resolve_name(const Graph& original, const Graph& planned, const std::string& name) {
  if (find_exact(planned, name) >= 0 || find_exact(original, name) >= 0) return name;
  std::set<std::string> hits;
  for (const Graph* g : {&planned, &original})
    for (const Node& n : g->nodes())
      if (n.name.find(name) != std::string::npos) hits.insert(n.name);
  if (hits.size() == 1) return *hits.begin();
  std::string list;
  size_t k = 0;
  for (const std::string& h : hits) {
    if (k++ == 3) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "'" : ", '") + h + "'";
  }
  if (hits.empty())
    throw GafError("--node '" + name +
                   "': no node has that name or a name containing it (gaf info MODEL --dump lists them)");
  throw GafError("--node '" + name + "' matches " + std::to_string(hits.size()) + " nodes (" + list +
                 "); give the whole name");
}

std::string op_desc(const Node& n) {
  const OpSchema* s = OpRegistry::global().find(n.op_type);
  return n.op_type + ", " + (s ? op_class_name(s->op_class) : "unknown class");
}

// The node a rewrite made in place of `name` (FusionPlan::source_nodes), or -1.
int replacement_of(const Graph& planned, const FusionPlan& plan, const std::string& name) {
  for (const auto& [made, sources] : plan.source_nodes)
    for (const std::string& s : sources)
      if (s == name) return find_exact(planned, made);
  return -1;
}

void describe_group(std::ostream& os, const Graph& g, const FusionGroup& grp, const Node& node) {
  os << "fused: group g" << grp.id << " " << grp.kernel.label << " (kind " << fusion_kind_name(grp.kind) << ", rule "
     << grp.rule_label() << "), " << grp.nodes.size() << " ops in one kernel:\n";
  for (int n : grp.nodes)
    os << "  " << (g.nodes()[n].name == node.name ? "* " : "  ") << g.nodes()[n].op_type << "  " << g.nodes()[n].name
       << "\n";
  for (const FuncDecision& d : grp.decisions) {
    bool mine = d.value.rfind(node.name + ":", 0) == 0;
    for (const std::string& o : node.outputs) mine = mine || d.value == o;
    if (!mine) continue;
    os << "decision: '" << d.value << "' is " << compute_decision_name(d.decision) << (d.at.empty() ? "" : " " + d.at)
       << " - " << d.reason << "\n";
  }
}

}  // namespace

std::string explain_node(const Graph& original, const Graph& planned, const FusionPlan& plan,
                         const std::string& query) {
  std::string name = resolve_name(original, planned, query);
  std::ostringstream os;
  int idx = find_exact(planned, name);
  if (idx < 0) {
    const Node& gone = original.nodes()[find_exact(original, name)];
    os << "node '" << name << "' (" << op_desc(gone) << ")\n";
    int to = replacement_of(planned, plan, name);
    os << "before grouping:";  // each rewrite line is a sentence ("Rewrote horizontal MatMul: ...")
    for (const std::string& r : plan.rewrites)
      if (r.find("'" + name + "'") != std::string::npos) os << " " << r << ";";
    if (to < 0) {
      os << " its result is not computed any more\n";
      return os.str();
    }
    os << " its work is now done by '" << planned.nodes()[to].name << "'\n";
    idx = to;
    name = planned.nodes()[to].name;
  } else {
    os << "node '" << name << "' (" << op_desc(planned.nodes()[idx]) << ")\n";
  }
  const Node& node = planned.nodes()[idx];
  const FusionGroup& grp = plan.groups.at(plan.group_of_node.at(idx));
  if (grp.nodes.size() >= 2)
    describe_group(os, planned, grp, node);
  else
    os << "not fused: runs alone as group g" << grp.id << " (" << node.op_type << ")\n";
  std::vector<const RefusedMerge*> mine;
  for (const RefusedMerge& r : plan.refused)
    for (const std::string& n : r.nodes)
      if (n == name) {
        mine.push_back(&r);
        break;
      }
  if (mine.empty()) {
    os << "refused merges involving it: none\n";
    return os.str();
  }
  os << "refused merges involving it (" << mine.size() << "):\n";
  for (const RefusedMerge* r : mine) {
    std::vector<std::string> others;
    for (const std::string& n : r->nodes)
      if (n != name) others.push_back(n);
    os << "  " << reason_code_id(r->code) << " [" << r->rule << "] with ";
    if (others.size() == 1) {
      os << "'" << others[0] << "'";
      int o = find_exact(planned, others[0]);
      if (o >= 0) os << " (in g" << plan.group_of_node.at(o) << ")";
    } else {
      os << others.size() << " other nodes";
    }
    os << "\n    " << r->message << "\n";
  }
  return os.str();
}

}  // namespace gaf
