#include "fusion/report/report.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace gaf {

namespace {

std::string mb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  return buf;
}

bool has_op(const Graph& g, const FusionGroup& grp, std::initializer_list<const char*> ops) {
  for (int n : grp.nodes)
    for (const char* op : ops)
      if (g.nodes()[n].op_type == op) return true;
  return false;
}

}  // namespace

std::string group_label(const Graph& g, const FusionGroup& grp) {
  const Node& first = g.nodes()[grp.nodes.front()];
  if (grp.kind == FusionKind::HorizontalMatMul) return "MatMul x" + std::to_string(
      [&] { for (int n : grp.nodes) if (g.nodes()[n].op_type == "Split") return g.nodes()[n].outputs.size(); return size_t{1}; }()) + " (horizontal)";
  if (grp.kind == FusionKind::MatMulEpilogue) {
    std::string s = has_op(g, grp, {"Gemm"}) ? "Gemm" : "MatMul";
    if (has_op(g, grp, {"Gelu", "Erf"})) s += "+GELU";
    else if (has_op(g, grp, {"Relu"})) s += "+ReLU";
    else if (has_op(g, grp, {"Tanh"})) s += "+GELU(tanh)";
    else if (has_op(g, grp, {"Sigmoid"})) s += "+Sigmoid";
    else if (has_op(g, grp, {"Add", "Mul", "Div"})) s += "+epilogue";
    return s;
  }
  if (grp.kind == FusionKind::Normalization) {
    if (grp.rule.rfind("layernorm", 0) == 0 || has_op(g, grp, {"LayerNormalization"})) return "LayerNorm";
    if (grp.rule.rfind("rmsnorm", 0) == 0) return "RMSNorm";
    if (has_op(g, grp, {"BatchNormalization"})) return "BatchNorm";
    if (has_op(g, grp, {"LogSoftmax", "Log"})) return "LogSoftmax";
    if (has_op(g, grp, {"Softmax", "Exp"})) return "Softmax";
    return "reduction";
  }
  if (grp.kind == FusionKind::Elementwise) return "elementwise";
  if (grp.kind == FusionKind::Custom) return grp.rule;
  if (grp.kind == FusionKind::Single) return first.op_type;
  return fusion_kind_name(grp.kind);
}

std::string fusion_log_lines(const Graph& g, const FusionPlan& plan) {
  std::map<std::string, int> detected;
  int applied = 0, total = 0;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    ++detected[group_label(g, grp)];
    ++applied;
    ++total;
  }
  std::map<std::string, int> refused_by_rule;
  for (const RefusedMerge& r : plan.refused)
    if (r.rule != "generic") {
      ++refused_by_rule[r.rule];
      ++total;
    }
  std::ostringstream os;
  for (const std::string& r : plan.rewrites) os << "[GRAPH_AUTOFUSION] " << r << "\n";
  for (const auto& [label, n] : detected)
    os << "[GRAPH_AUTOFUSION] Detected " << n << " " << label << " fusion opportunit"
       << (n == 1 ? "y" : "ies") << "\n";
  for (const auto& [rule, n] : refused_by_rule)
    os << "[GRAPH_AUTOFUSION] Refused " << n << " " << rule << " candidate" << (n == 1 ? "" : "s")
       << " (see the report for reason codes)\n";
  int64_t saved = 0;
  for (const FusionGroup& grp : plan.groups) saved += grp.bytes_saved();
  os << "[GRAPH_AUTOFUSION] Applied " << applied << "/" << total << " fusions successfully: "
     << g.nodes().size() << " ops in " << plan.groups.size() << " kernels, predicted "
     << mb(saved) << " less memory traffic\n";
  return os.str();
}

std::string fusion_text_report(const Graph& g, const FusionPlan& plan) {
  std::ostringstream os;
  char line[512];
  os << "groups (" << plan.groups.size() << " kernels for " << g.nodes().size() << " ops):\n";
  std::snprintf(line, sizeof line, "  %-5s %-17s %-26s %-16s %5s %12s  %s\n", "group", "kind", "rule",
                "label", "ops", "saved", "members");
  os << line;
  for (const FusionGroup& grp : plan.groups) {
    std::string members;
    for (size_t k = 0; k < grp.nodes.size(); ++k) {
      if (k == 3) {
        members += ", ...";
        break;
      }
      members += (k ? ", " : "") + g.nodes()[grp.nodes[k]].name;
    }
    std::snprintf(line, sizeof line, "  g%-4d %-17s %-26s %-16s %5zu %12s  %s\n", grp.id,
                  fusion_kind_name(grp.kind), grp.rule.empty() ? "-" : grp.rule.c_str(),
                  group_label(g, grp).c_str(), grp.nodes.size(), mb(grp.bytes_saved()).c_str(),
                  members.c_str());
    os << line;
  }
  // The seed's table: fusion kind, count, saving per fusion, total.
  struct Tot {
    int count = 0;
    int64_t saved = 0;
    int launches = 0;
  };
  std::map<std::string, Tot> totals;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    Tot& t = totals[fusion_kind_name(grp.kind)];
    ++t.count;
    t.saved += grp.bytes_saved();
    t.launches += grp.launches_saved();
  }
  os << "\nfusions by kind:\n";
  std::snprintf(line, sizeof line, "  %-18s %6s %16s %14s %16s\n", "kind", "count", "saved/fusion",
                "total saved", "launches saved");
  os << line;
  Tot all;
  for (const auto& [k, t] : totals) {
    std::snprintf(line, sizeof line, "  %-18s %6d %16s %14s %16d\n", k.c_str(), t.count,
                  mb(t.count ? t.saved / t.count : 0).c_str(), mb(t.saved).c_str(), t.launches);
    os << line;
    all.count += t.count;
    all.saved += t.saved;
    all.launches += t.launches;
  }
  std::snprintf(line, sizeof line, "  %-18s %6d %16s %14s %16d\n", "total", all.count, "",
                mb(all.saved).c_str(), all.launches);
  os << line;
  // Refusals by code, then the first few in full (all of them are in the JSON).
  std::map<std::string, int> by_code;
  for (const RefusedMerge& r : plan.refused) ++by_code[r.code];
  os << "\nrefused (" << plan.refused.size() << "):";
  for (const auto& [code, n] : by_code) os << " " << code << " x" << n;
  os << "\n";
  const size_t shown = 12;
  for (size_t i = 0; i < plan.refused.size() && i < shown; ++i)
    os << "  " << plan.refused[i].code << " [" << plan.refused[i].rule << "] " << plan.refused[i].message << "\n";
  if (plan.refused.size() > shown) os << "  ... " << plan.refused.size() - shown << " more (gaf plan --json)\n";
  return os.str();
}

nlohmann::json fusion_plan_json(const Graph& g, const FusionPlan& plan) {
  using nlohmann::json;
  json j;
  j["schema"] = "graph-autofusion/plan/1";
  j["model"] = g.name;
  j["num_ops"] = g.nodes().size();
  j["groups"] = json::array();
  std::map<std::string, json> totals;
  for (const FusionGroup& grp : plan.groups) {
    json gj;
    gj["id"] = grp.id;
    gj["kind"] = fusion_kind_name(grp.kind);
    gj["rule"] = grp.rule;
    gj["label"] = group_label(g, grp);
    gj["nodes"] = json::array();
    gj["ops"] = json::array();
    for (int n : grp.nodes) {
      gj["nodes"].push_back(g.nodes()[n].name);
      gj["ops"].push_back(g.nodes()[n].op_type);
    }
    gj["inputs"] = grp.inputs;
    gj["outputs"] = grp.outputs;
    gj["decisions"] = json::array();
    for (const FuncDecision& d : grp.decisions)
      gj["decisions"].push_back({{"value", d.value},
                                 {"decision", compute_decision_name(d.decision)},
                                 {"at", d.at},
                                 {"reason", d.reason}});
    gj["bytes_unfused"] = grp.bytes_unfused;
    gj["bytes_fused"] = grp.bytes_fused;
    gj["bytes_saved"] = grp.bytes_saved();
    gj["signature"] = grp.signature;
    j["groups"].push_back(gj);
    if (grp.nodes.size() >= 2) {
      json& t = totals[fusion_kind_name(grp.kind)];
      if (t.is_null()) t = {{"count", 0}, {"bytes_saved", int64_t{0}}};
      t["count"] = t["count"].get<int>() + 1;
      t["bytes_saved"] = t["bytes_saved"].get<int64_t>() + grp.bytes_saved();
    }
  }
  j["totals"] = totals;
  j["rewrites"] = plan.rewrites;
  j["refused"] = json::array();
  for (const RefusedMerge& r : plan.refused)
    j["refused"].push_back({{"code", r.code}, {"message", r.message}, {"rule", r.rule}, {"nodes", r.nodes}});
  return j;
}

std::string fusion_plan_dot(const Graph& g, const FusionPlan& plan) {
  static const std::map<FusionKind, const char*> colour = {
      {FusionKind::Elementwise, "#cfe8ff"},      {FusionKind::MatMulEpilogue, "#ffd9b3"},
      {FusionKind::Normalization, "#d6f5d6"},    {FusionKind::HorizontalMatMul, "#ffe6f0"},
      {FusionKind::CommCompute, "#e6e0ff"},      {FusionKind::Custom, "#fff5b3"},
      {FusionKind::Single, "#ffffff"}};
  std::ostringstream os;
  auto id = [](int n) { return "n" + std::to_string(n); };
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s) o += (c == '"' ? std::string("\\\"") : std::string(1, c));
    return o;
  };
  os << "digraph fusion {\n  rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=white, fontsize=10];\n";
  std::map<std::string, int> producer;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  for (const FusionGroup& grp : plan.groups) {
    bool cluster = grp.nodes.size() >= 2;
    if (cluster)
      os << "  subgraph cluster_g" << grp.id << " {\n    label=\"g" << grp.id << " " << esc(group_label(g, grp))
         << " (" << fusion_kind_name(grp.kind) << ")\"; style=filled; fillcolor=\"" << colour.at(grp.kind) << "\";\n";
    for (int n : grp.nodes)
      os << (cluster ? "    " : "  ") << id(n) << " [label=\"" << esc(g.nodes()[n].op_type) << "\", tooltip=\""
         << esc(g.nodes()[n].name) << "\"];\n";
    if (cluster) os << "  }\n";
  }
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const std::string& in : g.nodes()[i].inputs) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end()) os << "  " << id(it->second) << " -> " << id(static_cast<int>(i)) << ";\n";
    }
  // Refused merges between two named nodes: dashed red, labelled with the code.
  std::map<std::string, int> by_name;
  for (size_t i = 0; i < g.nodes().size(); ++i) by_name[g.nodes()[i].name] = static_cast<int>(i);
  for (const RefusedMerge& r : plan.refused)
    if (r.nodes.size() == 2 && by_name.count(r.nodes[0]) && by_name.count(r.nodes[1]))
      os << "  " << id(by_name[r.nodes[0]]) << " -> " << id(by_name[r.nodes[1]])
         << " [style=dashed, color=red, constraint=false, label=\"" << r.code << "\", fontcolor=red];\n";
  os << "}\n";
  return os.str();
}

}  // namespace gaf
