// The fusion picture as Graphviz DOT: nodes labelled with their op, fused groups as clusters
// coloured by kind (each linking to "#g<id>", the group's row in the HTML report), data edges, and
// refused merges between two nodes as dashed red edges labelled with the reason code. With
// fold_repeats, the second and later copies of a repeated block of groups become one box.
#include <map>
#include <set>
#include <sstream>

#include "fusion/report/report.h"
#include "fusion/report/repeats.h"

namespace gaf {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

}  // namespace

const char* fusion_kind_colour(FusionKind k) {
  switch (k) {
    case FusionKind::Elementwise: return "#cfe8ff";
    case FusionKind::MatMulEpilogue: return "#ffd9b3";
    case FusionKind::Normalization: return "#d6f5d6";
    case FusionKind::HorizontalMatMul: return "#ffe6f0";
    case FusionKind::CommCompute: return "#e6e0ff";
    case FusionKind::Custom: return "#fff5b3";
    case FusionKind::Single: break;
  }
  return "#ffffff";
}

std::string fusion_plan_dot(const Graph& g, const FusionPlan& plan, const DotOptions& opts) {
  RepeatedBlock rb = opts.fold_repeats ? find_repeated_block(plan) : RepeatedBlock{};
  const std::string folded_box = "folded";
  // The DOT node each graph node is drawn as: its own, or the folded box.
  std::vector<std::string> dot_id(g.nodes().size());
  for (const FusionGroup& grp : plan.groups)
    for (int n : grp.nodes) dot_id[n] = rb.folded(grp.id) ? folded_box : "n" + std::to_string(n);

  std::ostringstream os;
  os << "digraph fusion {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=white, fontsize=10];\n";
  for (const FusionGroup& grp : plan.groups) {
    if (rb.folded(grp.id)) continue;
    bool cluster = grp.nodes.size() >= 2;
    if (cluster)
      os << "  subgraph cluster_g" << grp.id << " {\n    label=\"g" << grp.id << " " << esc(grp.kernel.label) << " ("
         << fusion_kind_name(grp.kind) << ")\"; href=\"#g" << grp.id << "\"; style=filled; fillcolor=\""
         << fusion_kind_colour(grp.kind) << "\";\n";
    for (int n : grp.nodes)
      os << (cluster ? "    " : "  ") << dot_id[n] << " [label=\"" << esc(g.nodes()[n].op_type) << "\", tooltip=\""
         << esc(g.nodes()[n].name) << "\"];\n";
    if (cluster) os << "  }\n";
  }
  if (rb.repeats()) {
    size_t a = rb.first + rb.period, b = rb.first + rb.period * rb.count - 1;
    size_t ops = 0;
    for (size_t i = a; i <= b; ++i) ops += plan.groups[i].nodes.size();
    os << "  " << folded_box << " [shape=box3d, style=filled, fillcolor=\"#eeeeee\", fontsize=12, label=\"x"
       << rb.count - 1 << " identical layers\\ng" << a << "..g" << b << ": " << b - a + 1 << " groups, " << ops
       << " ops\\nsame groups, rules and decisions as g" << rb.first << "..g" << rb.first + rb.period - 1 << "\"];\n";
  }
  std::map<std::string, int> producer;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  std::set<std::pair<std::string, std::string>> edges;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& in : g.nodes()[i].inputs) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end()) continue;
      const std::string &from = dot_id[it->second], &to = dot_id[i];
      if (from != to && edges.insert({from, to}).second) os << "  " << from << " -> " << to << ";\n";
    }
  std::map<std::string, int> by_name;
  for (size_t i = 0; i < g.nodes().size(); ++i) by_name[g.nodes()[i].name] = static_cast<int>(i);
  for (const RefusedMerge& r : plan.refused) {
    if (r.nodes.size() != 2 || !by_name.count(r.nodes[0]) || !by_name.count(r.nodes[1])) continue;
    const std::string &from = dot_id[by_name[r.nodes[0]]], &to = dot_id[by_name[r.nodes[1]]];
    if (from == folded_box || to == folded_box) continue;  // the first block shows the same refusals
    os << "  " << from << " -> " << to << " [style=dashed, color=red, constraint=false, label=\""
       << reason_code_id(r.code) << "\", fontcolor=red, tooltip=\"" << esc(r.message) << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace gaf
