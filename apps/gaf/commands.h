// gaf subcommands. Each registers its options on the CLI11 app and returns the action to run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "apps/gaf/model_source.h"
#include "fusion/planner/planner.h"

namespace gaf::cli {

// Options every subcommand that names a model shares.
struct ModelArgs {
  std::string model;
  std::vector<std::string> dims;
  ModelOptions opts;
  void add_to(CLI::App* app);
  ModelOptions resolved() const;  // parses --dim
};

// Fusion controls shared by plan/run (and the GAF_FUSION environment variable, applied first).
struct FusionArgs {
  bool no_fusion = false;
  std::vector<std::string> disable_kinds, disable_rules, skip;
  int max_group_size = 0;
  void add_to(CLI::App* app);
  PlannerOptions resolved(const RuleRegistry& rules) const;
};

using Action = std::function<int()>;
Action add_run_command(CLI::App& app);
Action add_info_command(CLI::App& app);
Action add_plan_command(CLI::App& app);
Action add_compile_command(CLI::App& app);

}  // namespace gaf::cli
