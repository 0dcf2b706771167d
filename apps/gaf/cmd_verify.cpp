// gaf verify: every fused group against the unfused reference on the same inputs, per group the
// max abs / rel error and ULPs, groups above tolerance flagged (exit code 3); then the whole
// fused forward against the reference run of the model as loaded (before the planner's rewrites).
#include <cmath>
#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "apps/gaf/progress.h"
#include "fusion/report/report.h"
#include "generators/group_verifier.h"

namespace gaf::cli {

namespace {

struct VerifyArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;
  std::vector<std::string> inputs;
  uint32_t seed = 0;
  std::vector<float> range;
  Tolerance tol;
};

std::string num(const char* f, double v) {
  if (std::isinf(v)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// `l2`: with a column for the relative L2 error (--precision other than fp32).
void print_row(const std::string& what, const std::string& kind, const std::string& label, size_t ops,
               const TensorError& e, bool l2) {
  std::printf("  %-6s %-17s %-22s %4zu %10s %10s %9s%s  %s\n", what.c_str(), kind.c_str(), label.c_str(), ops,
              num("%.2e", e.max_abs).c_str(), num("%.2e", e.max_rel).c_str(),
              e.max_ulps < 0 ? "-" : std::to_string(e.max_ulps).c_str(),
              l2 ? (" " + num("%9.2e", e.rel_l2)).c_str() : "",
              e.ok() ? "ok"
                     : ("ABOVE TOLERANCE (" + std::to_string(e.outside) + " of " + std::to_string(e.elements) +
                        " elements, worst in '" + e.value + "')")
                           .c_str());
}

int verify(const VerifyArgs& a) {
  a.common.apply();
  if (!a.range.empty() && (a.range.size() != 2 || !(a.range[0] < a.range[1])))
    throw GafError("--range: expected LO,HI with LO < HI, e.g. --range -1,1");
  // NaN compares false with everything and inf accepts everything: both would pass any result.
  if (!(a.tol.rtol >= 0 && std::isfinite(a.tol.rtol)) || !(a.tol.atol >= 0 && std::isfinite(a.tol.atol)))
    throw GafError("--rtol and --atol must be finite and not negative (got rtol " + std::to_string(a.tol.rtol) +
                   ", atol " + std::to_string(a.tol.atol) + ")");
  TensorMap inputs = read_input_files(a.inputs);
  EngineOptions opts = engine_options(a.model, a.fusion, a.common);
  opts.keep_loaded = true;    // the end-to-end check runs the model as loaded
  opts.pack_weights = false;  // groups see the weights as the reference does
  Engine engine(a.model.model, opts, inputs);
  ReferenceExecutor& ref = engine.reference();
  const Graph& loaded = engine.loaded_graph();
  std::cout << "model: " << engine.description() << "\n";
  if (inputs.empty()) {
    std::optional<std::pair<float, float>> uniform;
    if (!a.range.empty()) uniform = std::make_pair(a.range[0], a.range[1]);
    inputs = make_default_inputs(loaded, a.seed, uniform);
    std::cout << "inputs: " << describe_default_inputs(a.seed, uniform) << "\n";
  } else {
    if (!a.range.empty()) throw GafError("--range applies to generated inputs; it cannot be used with --input");
    std::cout << "inputs: from --input files\n";
  }
  check_graph_inputs(loaded, inputs);
  const FusionPlan& plan = engine.plan();
  const Graph& g = engine.graph();
  // A lower precision: the same model planned alike with its weights packed in that precision;
  // its kernels are checked against the fp32 reference.
  const bool lowp = opts.precision != Precision::Fp32;
  std::unique_ptr<Engine> low;
  if (lowp) {
    EngineOptions lo = engine_options(a.model, a.fusion, a.common);
    lo.lowp_where_slower = true;  // verify checks the bf16 / int8 kernels themselves, on any CPU
    low = std::make_unique<Engine>(a.model.model, lo, inputs);
    if (low->plan().groups.size() != plan.groups.size())
      throw GafError("internal: the " + a.common.precision + " engine planned differently from the fp32 one");
    std::cout << "precision: " << a.common.precision << " kernels against the fp32 reference (rel L2 column)\n";
  }
  Engine& kernels = lowp ? *low : engine;
  PlanRunner* fused = nullptr;
  {
    Progress bar("compiling groups", plan.groups.size());
    fused = kernels.compile(group_progress(bar)).runner.get();
  }
  std::vector<GroupCheck> checks;
  {
    Progress bar("verifying groups", plan.groups.size());
    checks =
        verify_groups(g, plan, *fused, ref, inputs, a.tol, group_progress(bar), lowp ? &low->kernel_graph() : nullptr);
  }
  std::printf("each group on the reference's values of its inputs, against the reference (rtol %g, atol %g):\n",
              a.tol.rtol, a.tol.atol);
  std::printf("  %-6s %-17s %-22s %4s %10s %10s %9s%s  %s\n", "group", "kind", "label", "ops", "max abs", "max rel",
              "max ulps", lowp ? "    rel L2" : "", "status");
  int above = 0;
  for (const GroupCheck& c : checks) {
    const FusionGroup& grp = plan.groups[c.group];
    print_row("g" + std::to_string(grp.id), fusion_kind_name(grp.kind), grp.kernel.label, grp.nodes.size(), c.error,
              lowp);
    above += !c.error.ok();
  }
  // End to end: errors of all groups together, and the planner's rewrites, against the model as loaded.
  TensorMap got = kernels.run(inputs);
  TensorMap want = ref.run(loaded, inputs);
  std::printf("whole model, fused against the reference run of the model as loaded:\n");
  int outputs_above = 0;
  for (const auto& [name, t] : want) {
    TensorError e = compare_tensors(name, got.at(name), t, a.tol);
    print_row("output", "-", name, g.nodes().size(), e, lowp);
    outputs_above += !e.ok();
  }
  spdlog::info("threads: this process ran with {} threads", process_threads());
  std::printf("verify: %zu groups checked, %d above tolerance; %zu outputs, %d above tolerance\n", checks.size(), above,
              want.size(), outputs_above);
  return above || outputs_above ? 3 : 0;
}

}  // namespace

Action add_verify_command(CLI::App& app) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* c = app.add_subcommand("verify",
                                   "run each fused group against the unfused reference; per group max abs/rel error "
                                   "and ULPs (exit 3 when above tolerance)");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_option("--input", a->inputs, "NAME=FILE.npy (or .pb), repeatable; default: generated inputs");
  c->add_option("--seed", a->seed, "seed of generated inputs")->capture_default_str();
  c->add_option("--range", a->range, "generated float inputs uniform in [LO,HI], e.g. --range -1,1 (default N(0,1))")
      ->delimiter(',')
      ->expected(2);
  c->add_option("--rtol", a->tol.rtol, "relative tolerance")->capture_default_str();
  c->add_option("--atol", a->tol.atol, "absolute tolerance")->capture_default_str();
  return [a] { return verify(*a); };
}

}  // namespace gaf::cli
