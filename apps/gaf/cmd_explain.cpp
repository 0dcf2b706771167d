// gaf explain: why a node was fused the way it was, or why it was not.
#include <iostream>

#include "apps/gaf/commands.h"
#include "fusion/report/explain.h"

namespace gaf::cli {

namespace {

struct ExplainArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;
  std::vector<std::string> nodes;
};

int explain(const ExplainArgs& a) {
  a.common.apply();
  EngineOptions opts = engine_options(a.model, a.fusion, a.common);
  opts.keep_loaded = true;  // a node a rewrite removed is explained through its replacement
  Engine engine(a.model.model, opts);
  const FusionPlan& plan = engine.plan();
  if (!engine.fusion_enabled()) std::cout << "(fusion is off: --no-fusion or GAF_FUSION=no-fusion)\n";
  for (size_t i = 0; i < a.nodes.size(); ++i)
    std::cout << (i ? "\n" : "") << explain_node(engine.loaded_graph(), engine.graph(), plan, a.nodes[i]);
  return 0;
}

}  // namespace

Action add_explain_command(CLI::App& app) {
  auto a = std::make_shared<ExplainArgs>();
  CLI::App* c =
      app.add_subcommand("explain", "why a node was fused (group, rule, decision) or not (refusals, reason codes)");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_option("--node", a->nodes, "node name, or a part of exactly one node's name (repeatable)")->required();
  return [a] { return explain(*a); };
}

}  // namespace gaf::cli
