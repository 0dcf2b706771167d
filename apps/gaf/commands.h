// gaf subcommands. Each registers its options on the CLI11 app and returns the action to run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

#include "engine/engine.h"
#include "fusion/planner/planner.h"

namespace gaf::cli {

// Options every subcommand that names a model shares.
struct ModelArgs {
  std::string model;
  std::vector<std::string> dims;
  std::vector<std::string> branches;          // --branch NAME=true|false
  std::vector<std::string> last_row_outputs;  // --last-row-output NAME
  ModelOptions opts;
  void add_to(CLI::App* app, bool required = true);  // gaf info alone describes the CPU
  ModelOptions resolved() const;                     // parses --dim
};

// Fusion controls shared by plan/run/report/explain/verify (and the GAF_FUSION environment variable, applied first).
struct FusionArgs {
  bool no_fusion = false;
  std::vector<std::string> disable_kinds, disable_rules, skip;
  std::vector<std::string> rule_plugins;  // --rules lib.so (engine/rule_plugin.h)
  int max_group_size = 0;
  void add_to(CLI::App* app);
  PlannerOptions resolved(const RuleRegistry& rules) const;
};

// Options of every subcommand: -v/-q (log level, with GAF_LOG_LEVEL) and --threads (Halide's
// thread pool). apply() runs before the command does anything else.
struct CommonArgs {
  int verbose = 0;
  bool quiet = false;
  int threads = 0;                 // 0: Halide's default (HL_NUM_THREADS, else one per core)
  std::string max_memory;          // --max-memory: the tensor memory budget (default: the machine's RAM)
  std::string precision = "fp32";  // --precision fp32|bf16 (generators/precision.h)
  int tp = 1;                      // --tp: tensor-parallel ranks (apps/gaf/parallel_job.h)
  double comm_timeout = 60;        // --comm-timeout: seconds a collective may wait for the other ranks
  void add_to(CLI::App* app);
  void apply() const;
};

// The Engine's options from the flags every model command shares (model, fusion controls,
// threads); the command adds the rest (schedules, target, keep_loaded, ...).
EngineOptions engine_options(const ModelArgs& model, const FusionArgs& fusion, const CommonArgs& common);

// --input NAME=FILE.npy|.pb specs -> tensors (GafError naming the spec or file).
TensorMap read_input_files(const std::vector<std::string>& specs);

// Threads of this process now (Linux /proc/self/task): the Halide pool's workers plus the caller.
int process_threads();

using Action = std::function<int()>;
Action add_run_command(CLI::App& app);
Action add_info_command(CLI::App& app);
Action add_plan_command(CLI::App& app);
Action add_report_command(CLI::App& app);
Action add_explain_command(CLI::App& app);
Action add_verify_command(CLI::App& app);
Action add_compile_command(CLI::App& app);
Action add_generate_command(CLI::App& app);

}  // namespace gaf::cli
