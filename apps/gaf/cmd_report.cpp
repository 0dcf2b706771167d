// gaf report: the fusion plan as one self-contained HTML page (picture, totals per kind, groups,
// refused merges) and/or JSON; with --profile, each group measured fused vs unfused in this run.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "apps/gaf/npu_report.h"
#include "apps/gaf/progress.h"
#include "fusion/report/graphviz.h"
#include "fusion/report/html_report.h"
#include "fusion/report/report.h"
#include "generators/plan_profiler.h"
#include "runtime/tensor_io.h"

namespace gaf::cli {

namespace {

struct ReportArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;
  std::string html_file, json_file;
  bool profile = false;
  int repeat = 3;
  std::vector<std::string> inputs;
  uint32_t seed = 0;
  std::string target = "host";
  std::string npu_target_file;  // empty: the built-in target
  std::string schedules;        // npu-tile: gaf-tune's database
};

// The picture for the page: the SVG, or (no graphviz) an empty string and a note saying why.
std::pair<std::string, std::string> picture(const Graph& g, const FusionPlan& plan) {
  try {
    return {render_svg(fusion_plan_dot(g, plan, DotOptions{true})), ""};
  } catch (const GafError& e) {
    spdlog::warn("report without a picture: {}", e.what());
    return {"", e.what()};
  }
}

// Runs `work` (which compiles the plan fused, then every op alone) with a progress bar for each.
template <typename Work>
auto with_compile_progress(const Graph& g, const FusionPlan& plan, const std::string& what, Work work) {
  Progress fused_bar("compiling fused groups" + what, plan.groups.size());
  Progress unfused_bar("compiling unfused ops" + what, g.nodes().size());
  ProfileProgress progress{group_progress(fused_bar), [&](size_t done, const FusionGroup& grp) {
                             unfused_bar.update(done, g.nodes()[grp.nodes[0]].name);
                           }};
  return work(progress);
}

int report(const ReportArgs& a) {
  a.common.apply();
  const bool npu = a.target == "npu-tile";
  if (!npu && a.html_file.empty() && a.json_file.empty())
    throw GafError("nothing to write: give --html FILE and/or --json FILE (or --target npu-tile for the NPU table)");
  if (!npu && !a.npu_target_file.empty()) throw GafError("--npu-target needs --target npu-tile");
  std::optional<ScheduleDb> db;
  if (!a.schedules.empty()) db = ScheduleDb::load(a.schedules, /*missing_ok=*/false);
  const NpuTarget npu_target = npu ? npu_target_or_default(a.npu_target_file) : NpuTarget();
  if (!a.html_file.empty()) check_writable_file(a.html_file, "--html");
  if (!a.json_file.empty()) check_writable_file(a.json_file, "--json");
  if (a.repeat < 1) throw GafError("--repeat must be at least 1");
  TensorMap inputs = read_input_files(a.inputs);
  EngineOptions opts = engine_options(a.model, a.fusion, a.common);
  if (!npu && db) opts.schedules = &*db;  // host: tuned parameters, and the groups gaf-tune's guard runs apart
  Engine engine(a.model.model, opts, inputs);
  const FusionPlan& plan = engine.plan();
  const Graph& g = engine.graph();
  std::cout << "model: " << engine.description() << "\n" << fusion_log_lines(g, plan);

  if (a.profile || npu) {
    if (inputs.empty()) inputs = make_default_inputs(g, a.seed);
    check_graph_inputs(g, inputs);
  }
  std::optional<PlanProfile> profile;
  if (a.profile) {
    profile = with_compile_progress(g, plan, "", [&](const ProfileProgress& progress) {
      return profile_plan(g, plan, inputs, a.repeat, progress, npu || !db ? nullptr : &*db);
    });
    std::printf("profile: forward %.2f ms fused vs %.2f ms unfused (median of %d runs)\n", profile->fused_forward_ms,
                profile->unfused_forward_ms, profile->runs);
  }
  std::optional<NpuPlanModel> npu_model;
  if (npu) {
    npu_model = with_compile_progress(g, plan, " for npu-tile", [&](const ProfileProgress& progress) {
      return model_plan_on_npu(g, plan, inputs, npu_target, progress, db ? &*db : nullptr);
    });
    if (db)
      std::printf("schedules: %d of %zu groups use tuned NPU tiles from %s (target %s), the others the defaults\n",
                  npu_model->tuned_groups, plan.groups.size(), a.schedules.c_str(), npu_target.name.c_str());
    std::cout << "\n" << npu_report_text(plan, *npu_model);
  }
  const PlanProfile* prof = profile ? &*profile : nullptr;
  if (!a.json_file.empty()) {
    nlohmann::json j = fusion_plan_json(g, plan, prof);
    if (npu_model) j["npu_tile"] = npu_report_json(plan, *npu_model);
    write_file_atomically(a.json_file, {j.dump(2) + "\n"});
    std::cout << "wrote " << a.json_file << "\n";
  }
  if (!a.html_file.empty()) {
    auto [svg, note] = picture(g, plan);
    HtmlReportInputs in{engine.description(), svg, note, prof};
    write_file_atomically(a.html_file, {fusion_html_report(g, plan, in)});
    std::cout << "wrote " << a.html_file << "\n";
  }
  return 0;
}

}  // namespace

Action add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* c = app.add_subcommand("report", "write the fusion report: one self-contained HTML page and/or JSON");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_option("--html", a->html_file, "write the HTML report (picture, totals, groups, refusals)");
  c->add_option("--json", a->json_file, "write the plan as JSON (with --profile: measured times)");
  c->add_flag("--profile", a->profile, "measure each group fused and its ops unfused, in this run");
  c->add_option("--repeat", a->repeat, "--profile: timed runs (medians)")->capture_default_str();
  c->add_option("--input", a->inputs, "--profile: NAME=FILE.npy (or .pb), repeatable; default: generated inputs");
  c->add_option("--seed", a->seed, "--profile / npu-tile: seed of generated inputs")->capture_default_str();
  c->add_option("--target", a->target,
                "host, or npu-tile: also run the plan fused and unfused on the NPU tile model and print GM bytes, "
                "launches and modeled time per fusion kind")
      ->check(CLI::IsMember({"host", "npu-tile"}))
      ->capture_default_str();
  c->add_option("--npu-target", a->npu_target_file,
                "NPU target description (JSON, see schedules/targets/ascend910_like.json); default: the built-in one");
  c->add_option("--schedules", a->schedules,
                "tuned-schedule database written by gaf-tune (JSON): host, its parameters and the groups its "
                "guard measured slower fused (planned apart, GAF-NF030); npu-tile, the tuned NPU tiles");
  return [a] { return report(*a); };
}

}  // namespace gaf::cli
