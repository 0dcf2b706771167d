#include <cstdlib>

#include "apps/gaf/commands.h"

namespace gaf::cli {

void ModelArgs::add_to(CLI::App* app) {
  app->add_option("model", model, "path/to/model.onnx or builtin:bert-base")->required();
  app->add_option("--dim", dims, "bind a symbolic dim, NAME=VALUE (repeatable)");
  app->add_option("--layers", opts.layers, "builtin:bert-base: encoder layers")->capture_default_str();
  app->add_option("--seq", opts.seq, "builtin:bert-base: sequence length")->capture_default_str();
  app->add_option("--batch", opts.batch, "builtin:bert-base: batch size")->capture_default_str();
}

ModelOptions ModelArgs::resolved() const {
  ModelOptions o = opts;
  for (const std::string& d : dims) {
    auto [name, v] = parse_dim_binding(d);
    o.dims[name] = v;
  }
  return o;
}

void FusionArgs::add_to(CLI::App* app) {
  app->add_flag("--no-fusion", no_fusion, "every op its own group");
  app->add_option("--disable-kind", disable_kinds, "disable a fusion kind (repeatable)");
  app->add_option("--disable-rule", disable_rules, "disable a rule by name (repeatable)");
  app->add_option("--skip", skip, "never fuse this node (name or op type; repeatable)");
  app->add_option("--max-group-size", max_group_size, "nodes per fused group (default 64)");
}

PlannerOptions FusionArgs::resolved(const RuleRegistry& rules) const {
  PlannerOptions o;
  if (const char* env = std::getenv("GAF_FUSION")) {
    try {
      o.apply_controls(env, rules);
    } catch (const GafError& e) {
      throw GafError(std::string("GAF_FUSION: ") + e.what());
    }
  }
  std::string spec;
  if (no_fusion) spec += "no-fusion;";
  for (const std::string& k : disable_kinds) spec += "disable-kind=" + k + ";";
  for (const std::string& r : disable_rules) spec += "disable-rule=" + r + ";";
  for (const std::string& s : skip) spec += "skip=" + s + ";";
  if (max_group_size) spec += "max-size=" + std::to_string(max_group_size) + ";";
  o.apply_controls(spec, rules);
  return o;
}

}  // namespace gaf::cli
