// gaf run: plan the model, run it fused (each group one Halide pipeline), print the fusion log
// lines, compile time, median forward time and each output's shape and checksum; optionally the
// unfused baseline beside it (--compare) and the outputs saved as .npy.
#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "apps/gaf/progress.h"
#include "fusion/report/report.h"
#include "generators/plan_profiler.h"
#include "generators/shape_classes.h"
#include "runtime/fnv_hash.h"
#include "runtime/process_memory.h"
#include "runtime/tensor_io.h"

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
  bool check_fusion = false;
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

// Silences stdout of a tensor-parallel rank other than 0 while it lives, then prints `line`.
struct QuietRank {
  int saved = -1;
  std::string line;
  QuietRank() {
    std::fflush(stdout);
    saved = dup(1);
    const int null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) dup2(null, 1);
    if (null >= 0) close(null);
  }
  ~QuietRank() {
    std::fflush(stdout);
    if (saved >= 0) {
      dup2(saved, 1);
      close(saved);
    }
    if (!line.empty()) std::printf("%s\n", line.c_str());
  }
};

// The inputs' names, shapes and bytes.
uint64_t inputs_hash(const TensorMap& inputs) {
  Fnv1a h;
  for (const auto& [name, t] : inputs) {
    h.add(name.data(), name.size());
    for (int64_t d : t.shape()) h.add(&d, sizeof d);
    if (t.raw()) h.add(t.raw(), t.nbytes());
  }
  return h.value();
}

// Median of `repeat` timed runs (after the caller's warm-up), in ms.
template <typename RunFn>
double median_ms(int repeat, RunFn run) {
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    auto r0 = std::chrono::steady_clock::now();
    run();
    t.push_back(seconds_since(r0) * 1e3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// --check-fusion: each group timed fused and its members apart (profile_plan, `runs` runs); when
// some group loses, the model is planned again from its loaded graph with that group's nodes kept
// apart (GAF-NF030, PlannerOptions::keep_apart). Returns the engine to run.
std::unique_ptr<Engine> checked_fusion(std::unique_ptr<Engine> engine, EngineOptions opts, const TensorMap& inputs,
                                       int runs) {
  const FusionPlan& plan = engine->plan();
  const Graph& g = engine->kernel_graph();
  std::optional<Progress> bar(std::in_place, "check-fusion: compiling fused and unfused", plan.groups.size());
  const PlanProfile prof = profile_plan(g, plan, inputs, runs, {group_progress(*bar), {}});
  bar.reset();
  const std::map<std::string, std::string> apart = groups_slower_fused(g, plan, prof);
  std::set<int> slower;
  for (size_t n = 0; n < g.nodes().size(); ++n)
    if (apart.count(g.nodes()[n].name)) slower.insert(plan.group_of_node[n]);
  std::printf("check-fusion: %zu groups timed fused and apart (median of %d runs): %s\n", plan.groups.size(), runs,
              slower.empty() ? "every group at least as fast fused"
                             : (std::to_string(slower.size()) + " slower fused").c_str());
  if (slower.empty()) return engine;
  for (int s : slower)
    std::printf("  g%d %s: %.3f ms fused, %.3f ms apart -> its %zu nodes run apart (GAF-NF030)\n", s,
                plan.groups[s].rule_label().c_str(), prof.groups[s].fused_ms, prof.groups[s].unfused_ms,
                plan.groups[s].nodes.size());
  opts.fusion.keep_apart = apart;
  const std::string description = engine->description();
  return std::make_unique<Engine>(engine->take_loaded_graph(), opts, description);
}

int run(const RunArgs& a) {
  a.common.apply();
  std::unique_ptr<ScheduleDb> db;  // read first: a bad file fails before the model is loaded
  if (!a.schedules.empty()) db = std::make_unique<ScheduleDb>(ScheduleDb::load(a.schedules, false));
  TensorMap inputs = read_input_files(a.inputs);
  if (!a.output_dir.empty()) prepare_output_folder(a.output_dir, "--output-dir");
  if (a.repeat < 1) throw GafError("--repeat must be at least 1");
  if (a.check_fusion && a.reference) throw GafError("--check-fusion times fused groups: not with --reference");
  EngineOptions opts = engine_options(a.model, a.fusion, a.common);
  if (a.check_fusion && opts.comm) throw GafError("--check-fusion times groups in one process: not with --tp");
  opts.schedules = db.get();
  // The unfused baseline and a plan made again by --check-fusion start from the model as loaded.
  opts.keep_loaded = a.compare || a.check_fusion;

  // Tensor parallel: rank 0 prints the summary, every other rank one line of its own at the end.
  std::optional<QuietRank> quiet;
  if (opts.comm && opts.comm->rank() > 0) quiet.emplace();

  auto t0 = std::chrono::steady_clock::now();
  auto engine_ptr = std::make_unique<Engine>(a.model.model, opts, inputs);
  Engine* engine = engine_ptr.get();
  double load_s = seconds_since(t0);
  if (!engine->precision_note().empty()) spdlog::warn("{}", engine->precision_note());
  const std::vector<std::string> output_names = engine->graph().outputs();
  if (inputs.empty()) {
    inputs = make_default_inputs(engine->graph(), a.seed);
    std::printf("inputs: none given, using generated inputs (seed %u)\n", a.seed);
  }
  check_graph_inputs(engine->graph(), inputs);
  // Tensor parallel: every rank computes its part of the same forward, so the inputs must agree.
  if (opts.comm && opts.comm->size() > 1) opts.comm->check_same(inputs_hash(inputs), "the input data");
  size_t weight_bytes = 0;
  for (const auto& [_, v] : engine->graph().values())
    if (v.constant) weight_bytes += v.constant->nbytes();
  std::printf("model: %s: %zu ops, %.1f MB of weights, loaded in %.2f s (%d nodes folded)\n",
              engine->description().c_str(), engine->graph().nodes().size(), weight_bytes / 1e6, load_s,
              engine->passes().folded_nodes);

  TensorMap outs;
  if (a.reference) {
    const Graph& g = engine->graph();  // not planned: as loaded
    ReferenceExecutor& ref = engine->reference();
    outs = ref.run(g, inputs);  // warm-up compiles
    std::printf("compile: %d kernels in %.2f s [reference: one compute_root pipeline per op]\n",
                ref.stats().kernels_compiled, ref.stats().compile_seconds);
    double ms = median_ms(a.repeat, [&] { outs = ref.run(g, inputs); });
    std::printf("forward (reference): median %.2f ms over %d run(s)\n", ms, a.repeat);
  } else {
    if (a.check_fusion && engine->fusion_enabled()) {
      engine_ptr = checked_fusion(std::move(engine_ptr), opts, inputs, std::max(a.repeat, 5));
      engine = engine_ptr.get();
    }
    auto p0 = std::chrono::steady_clock::now();
    const FusionPlan& plan = engine->plan();
    const Graph& fused_graph = engine->kernel_graph();  // weights packed in place of the originals
    double plan_s = seconds_since(p0);
    std::cout << fusion_log_lines(fused_graph, plan);
    const size_t classes = shape_classes(fused_graph.dynamic).size();  // kernels per group
    std::optional<Progress> bar(std::in_place, "compiling groups", plan.groups.size() * classes);
    Executable& fused = engine->compile(group_progress(*bar));
    bar.reset();
    std::printf("compile: %zu groups%s -> %d kernels (%d reused) in %.2f s (planning %.2f s)\n", plan.groups.size(),
                classes > 1 ? (" x " + std::to_string(classes) + " size classes").c_str() : "",
                fused.stats.kernels_compiled, fused.stats.kernel_cache_hits, fused.stats.compile_seconds, plan_s);
    for (const std::string& f : fused.stats.schedule_fallbacks)
      spdlog::warn("reference schedule for {} (the host schedule does not lower with dynamic dims)", f);
    if (db)
      std::printf("schedules: %d of %zu groups use tuned parameters from %s, the others the defaults\n",
                  fused.stats.tuned_groups, plan.groups.size(), a.schedules.c_str());
    engine->run(inputs, outs);  // warm-up; later runs write into the same output tensors
    const Precision ran = engine->options().precision;
    const std::string what = std::string(engine->fusion_enabled() ? "fused" : "unfused") +
                             (ran == Precision::Fp32 ? "" : std::string(", ") + precision_name(ran));
    double ms = median_ms(a.repeat, [&] { engine->run(inputs, outs); });
    std::printf("forward (%s): median %.2f ms over %d run(s), peak intermediate memory %.1f MB\n", what.c_str(), ms,
                a.repeat, fused.runner->peak_bytes() / 1e6);
    if (opts.comm) {
      const ShardResult& sh = engine->sharding();
      std::printf("tensor parallel: rank %d of %d, %zu region(s) sharded, %zu left replicated, %d AllReduce\n",
                  opts.comm->rank(), opts.comm->size(), sh.applied.size(), sh.refused.size(), sh.all_reduces);
    }
    if (quiet) {
      char line[160];
      std::snprintf(line, sizeof line, "rank %d of %d: forward median %.2f ms, %.1f MB of weights (its shard)",
                    opts.comm->rank(), opts.comm->size(), ms, weight_bytes / 1e6);
      quiet->line = line;
    }
    if (a.profile) {
      const auto [profiled_ms, group_ms] = time_groups(*fused.runner, plan.groups.size(), inputs, a.repeat);
      double groups_sum = 0;
      for (double g : group_ms) groups_sum += g;
      std::printf(
          "profile (median of %d run(s); the profiled forward %.2f ms, its groups' medians sum to %.2f ms): "
          "group, kind, label, ms, predicted bytes saved\n",
          a.repeat, profiled_ms, groups_sum);
      for (const FusionGroup& grp : plan.groups)
        std::printf("  g%-4d %-17s %-16s %9.3f ms %10.2f MB%s\n", grp.id, fusion_kind_name(grp.kind),
                    grp.kernel.label.c_str(), group_ms[grp.id], grp.bytes_saved() / 1e6,
                    fused.tuned[grp.id] ? "  (tuned)" : "");
    }
    if (a.compare && engine->fusion_enabled()) {
      // The model as loaded, every op its own kernel, packed like the fused graph (same
      // schedules); moved out of the fused engine so that no third copy of the weights is made.
      EngineOptions off = opts;
      off.fusion.enabled = false;
      off.keep_loaded = false;
      Engine unfused(engine->take_loaded_graph(), off, engine->description());
      TensorMap base;
      unfused.run(inputs, base);
      double ums = median_ms(a.repeat, [&] { unfused.run(inputs, base); });
      std::printf("forward (unfused baseline, every op its own kernel): median %.2f ms -> fused is %.2fx\n", ums,
                  ums / ms);
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
  if (!a.output_dir.empty() && !quiet) {  // rank 0 writes the outputs (every rank holds them whole)
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
  c->add_flag("--check-fusion", a->check_fusion,
              "time each group fused and its ops apart first; a group slower fused runs apart (GAF-NF030)");
  c->add_option("--schedules", a->schedules, "tuned-schedule database written by gaf-tune (JSON)");
  c->add_flag("--reference", a->reference, "run the unfused reference executor (one compute_root pipeline per op)");
  return [a] { return run(*a); };
}

}  // namespace gaf::cli
