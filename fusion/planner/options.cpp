// Fusion controls: the same switches from the CLI and from the GAF_FUSION environment variable.
#include <sstream>

#include "fusion/planner/planner.h"

namespace gaf {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

void PlannerOptions::apply_controls(const std::string& spec, const RuleRegistry& rules) {
  for (const std::string& item : split(spec, ';')) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "no-fusion") {
      enabled = false;
    } else if (key == "disable-kind") {
      for (const std::string& k : split(val, ',')) {
        FusionKind kind;
        if (!parse_fusion_kind(k, &kind))
          throw GafError("unknown fusion kind '" + k + "' (valid: " + join(fusion_kind_names()) + ")");
        disabled_kinds.insert(kind);
      }
    } else if (key == "disable-rule") {
      for (const std::string& r : split(val, ',')) disabled_rules.insert(r);
    } else if (key == "skip") {
      for (const std::string& n : split(val, ',')) skip_nodes.insert(n);
    } else if (key == "max-size") {
      try {
        max_group_size = std::stoi(val);
      } catch (const std::exception&) {
        max_group_size = 0;
      }
      if (max_group_size < 1) throw GafError("max-size '" + val + "' must be a positive integer");
    } else if (key == "no-generic") {
      generic_grouping = false;
    } else {
      throw GafError("unknown fusion control '" + key +
                     "' (valid: no-fusion, disable-kind=K,.., disable-rule=R,.., skip=NODE|OP,.., "
                     "max-size=N, no-generic)");
    }
  }
  validate(rules);
}

void PlannerOptions::check_skip_names(const Graph& g) const {
  for (const std::string& s : skip_nodes) {
    bool found = false;
    for (const Node& n : g.nodes()) found = found || n.name == s || n.op_type == s;
    if (!found) throw GafError("--skip '" + s + "': no node of the model has that name or op type");
  }
}

void PlannerOptions::validate(const RuleRegistry& rules) const {
  for (const std::string& r : disabled_rules)
    if (!rules.find(r)) throw GafError("unknown fusion rule '" + r + "' (valid: " + join(rules.names()) + ")");
  if (max_group_size < 1) throw GafError("the max group size must be at least 1");
}

}  // namespace gaf
