#include "fusion/report/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "fusion/report/repeats.h"

namespace gaf {

namespace {

std::string mb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  return buf;
}

}  // namespace

// With dynamic dims, sizes and savings are those at the representative point.
static std::string at_upper_bounds(const Graph& g) {
  if (g.dynamic.empty()) return "";
  std::string at;
  for (const auto& [name, r] : g.dynamic) at += (at.empty() ? "" : ", ") + name + "=" + std::to_string(r.hi);
  return " (sizes at " + at + ", the upper bounds of the dynamic dims)";
}

std::string fusion_log_lines(const Graph& g, const FusionPlan& plan, const TextDetail& detail) {
  std::map<std::string, int> detected;
  int applied = 0, total = 0;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    ++detected[grp.kernel.label];
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
  if (!plan.passes.empty()) {  // the model's way to kernels so far, in order
    os << "[GRAPH_AUTOFUSION] Passes:";
    for (size_t i = 0; i < plan.passes.size(); ++i)
      os << (i ? " >" : "") << " " << plan.passes[i].name << " (" << plan.passes[i].did << ")";
    os << "\n";
  }
  // Rewrites of one kind (the sentence's words up to its colon) after the first are counted.
  std::map<std::string, int> more_of_kind;
  std::vector<std::string> kinds;
  for (const std::string& r : plan.rewrites) {
    const std::string kind = r.substr(0, r.find(':'));
    if (detail.full || !more_of_kind.count(kind)) {
      os << "[GRAPH_AUTOFUSION] " << r << "\n";
      if (!more_of_kind.count(kind)) kinds.push_back(kind);
      more_of_kind.emplace(kind, 0);
      continue;
    }
    ++more_of_kind[kind];
  }
  for (const std::string& kind : kinds)
    if (more_of_kind[kind] > 0)
      os << "[GRAPH_AUTOFUSION] " << kind << ": " << more_of_kind[kind]
         << " more like it (gaf plan --groups lists them)\n";
  for (const auto& [label, n] : detected)
    os << "[GRAPH_AUTOFUSION] Detected " << n << " " << label << " fusion opportunit" << (n == 1 ? "y" : "ies") << "\n";
  for (const auto& [rule, n] : refused_by_rule)
    os << "[GRAPH_AUTOFUSION] Refused " << n << " " << rule << " candidate" << (n == 1 ? "" : "s")
       << " (see the report for reason codes)\n";
  int64_t saved = 0;
  for (const FusionGroup& grp : plan.groups) saved += grp.bytes_saved();
  os << "[GRAPH_AUTOFUSION] Applied " << applied << "/" << total << " fusions successfully: " << g.nodes().size()
     << " ops in " << plan.groups.size() << " kernels, predicted " << mb(saved) << " less memory traffic"
     << at_upper_bounds(g) << "\n";
  return os.str();
}

std::string fusion_text_report(const Graph& g, const FusionPlan& plan, const TextDetail& detail) {
  std::ostringstream os;
  char line[512];
  os << "groups (" << plan.groups.size() << " kernels for " << g.nodes().size() << " ops)" << at_upper_bounds(g)
     << ":\n";
  std::snprintf(line, sizeof line, "  %-5s %-17s %-26s %-16s %5s %12s  %s\n", "group", "kind", "rule", "label", "ops",
                "saved", "members");
  os << line;
  const RepeatedBlock rb = detail.full ? RepeatedBlock{} : find_repeated_block(plan);
  for (const FusionGroup& grp : plan.groups) {
    const size_t i = static_cast<size_t>(grp.id);
    if (rb.folded(i)) {
      if (i == rb.first + rb.period)
        os << "  g" << i << "..g" << rb.first + rb.period * rb.count - 1 << ": " << rb.count - 1
           << " more blocks like g" << rb.first << "..g" << rb.first + rb.period - 1
           << " (same kinds, rules and decisions; gaf plan --groups lists them)\n";
      continue;
    }
    std::string members;
    for (size_t k = 0; k < grp.nodes.size(); ++k) {
      if (k == 3) {
        members += ", ...";
        break;
      }
      members += (k ? ", " : "") + g.nodes()[grp.nodes[k]].name;
    }
    std::snprintf(line, sizeof line, "  g%-4d %-17s %-26s %-16s %5zu %12s  %s\n", grp.id, fusion_kind_name(grp.kind),
                  grp.rule.empty() ? "-" : grp.rule_label().c_str(), grp.kernel.label.c_str(), grp.nodes.size(),
                  mb(grp.bytes_saved()).c_str(), members.c_str());
    os << line;
  }
  // The seed's table: fusion kind, count, saving per fusion, total.
  os << "\nfusions by kind:\n";
  std::snprintf(line, sizeof line, "  %-18s %6s %16s %14s %16s\n", "kind", "count", "saved/fusion", "total saved",
                "launches saved");
  os << line;
  KindTotal all;
  for (const auto& [k, t] : fusion_totals(plan)) {
    std::snprintf(line, sizeof line, "  %-18s %6d %16s %14s %16d\n", k.c_str(), t.count,
                  mb(t.count ? t.bytes_saved / t.count : 0).c_str(), mb(t.bytes_saved).c_str(), t.launches_saved);
    os << line;
    all.count += t.count;
    all.bytes_saved += t.bytes_saved;
    all.launches_saved += t.launches_saved;
  }
  std::snprintf(line, sizeof line, "  %-18s %6d %16s %14s %16d\n", "total", all.count, "", mb(all.bytes_saved).c_str(),
                all.launches_saved);
  os << line;
  // Refusals by code, then the first few in full (all of them are in the JSON).
  std::map<std::string, int> by_code;
  for (const RefusedMerge& r : plan.refused) ++by_code[reason_code_id(r.code)];
  os << "\nrefused (" << plan.refused.size() << "):";
  for (const auto& [code, n] : by_code) os << " " << code << " x" << n;
  os << "\n";
  const size_t shown = detail.full ? plan.refused.size() : detail.refusals;
  for (size_t i = 0; i < plan.refused.size() && i < shown; ++i)
    os << "  " << reason_code_id(plan.refused[i].code) << " [" << plan.refused[i].rule << "] "
       << plan.refused[i].message << "\n";
  if (plan.refused.size() > shown)
    os << "  ... " << plan.refused.size() - shown << " more (gaf plan --groups, or --json)\n";
  return os.str();
}

std::map<std::string, KindTotal> fusion_totals(const FusionPlan& plan, const PlanProfile* profile) {
  std::map<std::string, KindTotal> totals;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    KindTotal& t = totals[fusion_kind_name(grp.kind)];
    ++t.count;
    t.bytes_saved += grp.bytes_saved();
    t.launches_saved += grp.launches_saved();
    if (profile) t.ms_saved += profile->groups.at(grp.id).saved_ms();
  }
  return totals;
}

nlohmann::json fusion_plan_json(const Graph& g, const FusionPlan& plan, const PlanProfile* profile) {
  using nlohmann::json;
  json j;
  j["schema"] = "graph-autofusion/plan/1";
  j["model"] = g.name;
  j["num_ops"] = g.nodes().size();
  j["groups"] = json::array();
  for (const FusionGroup& grp : plan.groups) {
    json gj;
    gj["id"] = grp.id;
    gj["kind"] = fusion_kind_name(grp.kind);
    gj["rule"] = grp.rule;
    gj["grown"] = grp.grown;
    gj["label"] = grp.kernel.label;
    gj["nodes"] = json::array();
    gj["ops"] = json::array();
    gj["source_nodes"] = json::array();
    for (int n : grp.nodes) {
      gj["nodes"].push_back(g.nodes()[n].name);
      gj["ops"].push_back(g.nodes()[n].op_type);
      auto src = plan.source_nodes.find(g.nodes()[n].name);
      if (src == plan.source_nodes.end())
        gj["source_nodes"].push_back(g.nodes()[n].name);
      else
        for (const std::string& o : src->second) gj["source_nodes"].push_back(o);
    }
    gj["inputs"] = grp.inputs;
    gj["outputs"] = grp.outputs;
    gj["decisions"] = json::array();
    for (const FuncDecision& d : grp.decisions)
      gj["decisions"].push_back(
          {{"value", d.value}, {"decision", compute_decision_name(d.decision)}, {"at", d.at}, {"reason", d.reason}});
    gj["bytes_unfused"] = grp.bytes_unfused;
    gj["bytes_fused"] = grp.bytes_fused;
    gj["bytes_saved"] = grp.bytes_saved();
    gj["signature"] = grp.signature;
    if (profile) {
      const GroupTiming& t = profile->groups.at(grp.id);
      gj["fused_ms"] = t.fused_ms;
      gj["unfused_ms"] = t.unfused_ms;
    }
    j["groups"].push_back(gj);
  }
  json totals = json::object();
  for (const auto& [kind, t] : fusion_totals(plan, profile)) {
    totals[kind] = {{"count", t.count}, {"bytes_saved", t.bytes_saved}, {"launches_saved", t.launches_saved}};
    if (profile) totals[kind]["ms_saved"] = t.ms_saved;
  }
  if (profile)
    j["profile"] = {{"runs", profile->runs},
                    {"fused_forward_ms", profile->fused_forward_ms},
                    {"unfused_forward_ms", profile->unfused_forward_ms}};
  j["totals"] = totals;
  j["passes"] = json::array();
  for (const PassRun& p : plan.passes) j["passes"].push_back({{"name", p.name}, {"did", p.did}});
  j["rewrites"] = plan.rewrites;
  j["refused"] = json::array();
  for (const RefusedMerge& r : plan.refused)
    j["refused"].push_back(
        {{"code", reason_code_id(r.code)}, {"message", r.message}, {"rule", r.rule}, {"nodes", r.nodes}});
  return j;
}

}  // namespace gaf
