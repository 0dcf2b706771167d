// gaf plan: what would be fused, how, what it saves, and what was refused and why.
#include <fstream>
#include <iostream>

#include "apps/gaf/commands.h"
#include "fusion/report/report.h"
#include "runtime/tensor_io.h"

namespace gaf::cli {

namespace {

struct PlanArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;
  std::string json_file, dot_file;
  bool all_groups = false;
};

int plan(const PlanArgs& a) {
  a.common.apply();
  if (!a.json_file.empty()) check_writable_file(a.json_file, "--json");
  if (!a.dot_file.empty()) check_writable_file(a.dot_file, "--dot");
  Engine engine(a.model.model, engine_options(a.model, a.fusion, a.common));
  const FusionPlan& p = engine.plan();
  const Graph& g = engine.graph();
  std::cout << "model: " << engine.description() << "\n";
  TextDetail detail;
  detail.full = a.all_groups;
  std::cout << fusion_log_lines(g, p, detail) << "\n" << fusion_text_report(g, p, detail);
  if (!a.json_file.empty()) {
    write_file_atomically(a.json_file, {fusion_plan_json(g, p).dump(2) + "\n"});
    std::cout << "wrote " << a.json_file << "\n";
  }
  if (!a.dot_file.empty()) {
    write_file_atomically(a.dot_file, {fusion_plan_dot(g, p)});
    std::cout << "wrote " << a.dot_file << "\n";
  }
  return 0;
}

}  // namespace

Action add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* c = app.add_subcommand("plan", "show the fusion plan: groups, decisions, savings, refusals");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_flag("--groups", a->all_groups,
              "list every group, rewrite and refusal (default: one screen, repeated layers folded)");
  c->add_option("--json", a->json_file, "write the plan as JSON");
  c->add_option("--dot", a->dot_file, "write the graph with fused groups as Graphviz DOT");
  return [a] { return plan(*a); };
}

}  // namespace gaf::cli
