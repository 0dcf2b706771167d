// gaf run: plan the model, run it fused (each group one Halide pipeline), print the fusion log
// lines, compile time, median forward time and each output's shape and checksum; optionally the
// unfused baseline beside it (--compare) and the outputs saved as .npy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <optional>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "apps/gaf/progress.h"
#include "fusion/report/report.h"
#include "generators/fused_executor.h"
#include "generators/plan_profiler.h"
#include "generators/weight_packing.h"
#include "runtime/process_memory.h"
#include "runtime/tensor_io.h"
#include "schedules/host_target.h"

namespace gaf::cli {

namespace {

struct RunArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;
  std::vector<std::string> inputs;
  std::string output_dir;
  int repeat = 1;
  uint32_t seed = 0;
  bool compare = false;
  bool reference = false;
  bool profile = false;
  std::string schedules;  // tuned-schedule database (gaf-tune)
};

std::string checksum(const Tensor& t) {
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.as_double(i);
    sum += v;
    abs_sum += std::fabs(v);
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "sum=%.6e abs_sum=%.6e", sum, abs_sum);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Median of `repeat` timed runs (after the caller's warm-up), in ms; `outs` gets the last result.
template <typename RunFn>
double median_ms(int repeat, TensorMap& outs, RunFn run) {
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    auto r0 = std::chrono::steady_clock::now();
    outs = run();
    t.push_back(seconds_since(r0) * 1e3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run(const RunArgs& a) {
  a.common.apply();
  std::unique_ptr<ScheduleDb> db;  // read first: a bad file fails before the model is loaded
  if (!a.schedules.empty()) db = std::make_unique<ScheduleDb>(ScheduleDb::load(a.schedules, false));
  TensorMap inputs = read_input_files(a.inputs);
  if (!a.output_dir.empty()) check_writable_folder(a.output_dir, "--output-dir");
  if (a.repeat < 1) throw GafError("--repeat must be at least 1");
  RuleRegistry rules = RuleRegistry::builtin();
  PlannerOptions opts = a.fusion.resolved(rules);

  ReferenceExecutor ref;
  auto t0 = std::chrono::steady_clock::now();
  LoadedModel m = load_model(a.model.model, a.model.resolved(), ref, inputs);
  double load_s = seconds_since(t0);
  a.fusion.check_skip_names(m.graph);
  const Graph& g = m.graph;  // moved into the fused graph below unless --compare or --reference
  const std::vector<std::string> output_names = g.outputs();
  if (inputs.empty()) {
    inputs = make_default_inputs(g, a.seed);
    std::printf("inputs: none given, using generated inputs (seed %u)\n", a.seed);
  }
  check_graph_inputs(g, inputs);
  size_t weight_bytes = 0;
  for (const auto& [_, v] : g.values())
    if (v.constant) weight_bytes += v.constant->nbytes();
  std::printf("model: %s: %zu ops, %.1f MB of weights, loaded in %.2f s (%d nodes folded)\n",
              m.description.c_str(), g.nodes().size(), weight_bytes / 1e6, load_s, m.passes.folded_nodes);

  TensorMap outs;
  if (a.reference) {
    outs = ref.run(g, inputs);  // warm-up compiles
    std::printf("compile: %d kernels in %.2f s [reference: one compute_root pipeline per op]\n",
                ref.stats().kernels_compiled, ref.stats().compile_seconds);
    double ms = median_ms(a.repeat, outs, [&] { return ref.run(g, inputs); });
    std::printf("forward (reference): median %.2f ms over %d run(s)\n", ms, a.repeat);
  } else {
    auto p0 = std::chrono::steady_clock::now();
    // The planner's rewrites (horizontal MatMul, BN folding) replace weights: rewrite a copy only
    // when --compare still needs the graph as loaded, else the loaded graph itself, so the
    // replaced weights are freed rather than kept as a second copy.
    Graph fused_graph = a.compare ? Graph(g) : std::move(m.graph);
    FusionPlan plan = plan_fusion_rewriting(fused_graph, opts, rules);
    pack_matmul_weights(fused_graph, host_params_for(host_target()));  // in place of the originals
    double plan_s = seconds_since(p0);
    std::cout << fusion_log_lines(fused_graph, plan);
    std::optional<Progress> bar(std::in_place, "compiling groups", plan.groups.size());
    FusedExecutor fused(fused_graph, plan, db.get(), group_progress(*bar, fused_graph));
    bar.reset();
    std::printf("compile: %zu groups -> %d kernels (%d reused) in %.2f s (planning %.2f s)\n",
                plan.groups.size(), fused.stats().kernels_compiled, fused.stats().kernel_cache_hits,
                fused.stats().compile_seconds, plan_s);
    if (db)
      std::printf("schedules: %d of %zu groups use tuned parameters from %s, the others the defaults\n",
                  fused.stats().tuned_groups, plan.groups.size(), a.schedules.c_str());
    outs = fused.run(inputs);  // warm-up
    const char* what = opts.enabled ? "fused" : "unfused";
    double ms = median_ms(a.repeat, outs, [&] { return fused.run(inputs); });
    std::printf("forward (%s): median %.2f ms over %d run(s), peak intermediate memory %.1f MB\n", what,
                ms, a.repeat, fused.stats().peak_bytes / 1e6);
    if (a.profile) {
      std::vector<double> group_ms = time_groups(fused, plan.groups.size(), inputs, a.repeat).second;
      std::printf("profile (median of %d run(s)): group, kind, label, ms, predicted bytes saved\n", a.repeat);
      for (const FusionGroup& grp : plan.groups)
        std::printf("  g%-4d %-17s %-16s %9.3f ms %10.2f MB%s\n", grp.id, fusion_kind_name(grp.kind),
                    group_label(fused_graph, grp).c_str(), group_ms[grp.id], grp.bytes_saved() / 1e6,
                    fused.tuned()[grp.id] ? "  (tuned)" : "");
    }
    if (a.compare && opts.enabled) {
      PlannerOptions off = opts;
      off.enabled = false;
      // Packed like the fused graph (same schedules), in place: the loaded graph is not needed
      // unpacked after this, and a copy would hold a third set of weights.
      pack_matmul_weights(m.graph, host_params_for(host_target()));
      FusionPlan single = plan_fusion(g, off, rules);
      FusedExecutor unfused(g, single, db.get());
      TensorMap base = unfused.run(inputs);
      double ums = median_ms(a.repeat, base, [&] { return unfused.run(inputs); });
      std::printf("forward (unfused baseline, every op its own kernel): median %.2f ms -> fused is %.2fx\n",
                  ums, ums / ms);
      std::printf("fused vs unfused: max relative difference %.2e\n", max_rel_diff(outs, base));
    }
  }
  // Weights (the horizontal rewrite's concatenated ones replace the originals in the fused
  // graph; the unrewritten graph keeps them for --compare), activations, JIT code and LLVM.
  std::printf("peak RSS %.1f MB (weights %.1f MB)\n", peak_rss_bytes() / 1e6, weight_bytes / 1e6);
  for (const std::string& name : output_names) {
    const Tensor& t = outs.at(name);
    std::printf("output %s: %s%s %s\n", name.c_str(), dtype_name(t.dtype()), shape_str(t.shape()).c_str(),
                checksum(t).c_str());
  }
  spdlog::info("threads: this process ran with {} threads", process_threads());
  if (!a.output_dir.empty()) {
    const std::vector<std::string> paths = output_npy_paths(a.output_dir, output_names);
    for (size_t i = 0; i < paths.size(); ++i) {
      write_npy(paths[i], outs.at(output_names[i]));
      std::printf("wrote %s (output '%s')\n", paths[i].c_str(), output_names[i].c_str());
    }
  }
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = app.add_subcommand("run", "run a model fused and print time, output shapes and checksums");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_option("--input", a->inputs, "NAME=FILE.npy (or .pb), repeatable; default: generated inputs");
  c->add_option("--output-dir", a->output_dir, "write DIR/NAME.npy for each graph output");
  c->add_option("--repeat", a->repeat, "timed forward passes after the warm-up")->capture_default_str();
  c->add_option("--seed", a->seed, "seed of generated inputs")->capture_default_str();
  c->add_flag("--compare", a->compare, "also run the unfused baseline and print the speed-up");
  c->add_flag("--profile", a->profile, "print the median time of each group over --repeat extra runs");
  c->add_option("--schedules", a->schedules, "tuned-schedule database written by gaf-tune (JSON)");
  c->add_flag("--reference", a->reference, "run the unfused reference executor (one compute_root pipeline per op)");
  return [a] { return run(*a); };
}

}  // namespace gaf::cli
