// gaf-tune: searches each distinct fused group's host schedule parameters, measures candidates,
// keeps the best in a schedule database that gaf run and the AOT build read. With --target
// npu-tile: the NPU tile model's tile sizes, costed by the simulator's modeled time. Exit codes as gaf:
// 0 ok, 1 user error (one line naming what is wrong), 2 internal error, 130 interrupted. Ctrl-C
// stops after the candidate being measured and keeps everything found so far.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <regex>

#include <CLI/CLI.hpp>

#include "apps/gaf-tune/fusion_guard.h"
#include "apps/gaf-tune/tuner.h"
#include "apps/gaf/commands.h"
#include "engine/model_source.h"
#include "runtime/file_io.h"
#include "schedules/host_target.h"

namespace {

std::atomic<bool> g_stop{false};
void on_interrupt(int) { g_stop = true; }

// "10m", "90s", "1h", "45" (seconds).
double parse_budget(const std::string& s) {
  std::smatch m;
  if (!std::regex_match(s, m, std::regex(R"(\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*)")))
    throw gaf::GafError("--budget '" + s + "': expected a duration such as 90s, 10m or 1h");
  double v = std::strtod(m[1].str().c_str(), nullptr);
  v = m[2] == "h" ? v * 3600 : m[2] == "m" ? v * 60 : v;
  if (!(v >= 1 && v <= 30 * 86400)) throw gaf::GafError("--budget '" + s + "': must be between 1 s and 30 days");
  return v;
}

// `npu`: times are the NPU model's (modeled, printed in microseconds) and Mullapudi2016 does not apply.
void print_table(const std::vector<gaf::tune::GroupResult>& results, bool npu) {
  const double scale = npu ? 1000 : 1;  // ms -> us
  std::printf("\n%-28s %6s %11s %11s %8s %14s %7s %8s  %s\n", "group", "count", npu ? "default us" : "default ms",
              npu ? "tuned us" : "tuned ms", "speedup", "Mullapudi ms", "trials", "rejected", "parameters");
  double before = 0, after = 0;
  for (const auto& r : results) {
    char mul[32] = "n/a";
    if (r.mullapudi_ms >= 0) std::snprintf(mul, sizeof mul, "%.3f", r.mullapudi_ms);
    std::printf("%-28s %6d %11.3f %11.3f %7.2fx %14s %7d %8d  %s%s\n", r.label.substr(0, 28).c_str(), r.groups,
                r.default_ms * scale, r.best_ms * scale, r.default_ms / std::max(r.best_ms, 1e-12), mul, r.trials,
                r.rejected, r.best.c_str(), r.resumed ? " (from the database)" : "");
    if (!npu && r.mullapudi_ms < 0 && !r.mullapudi_note.empty())
      std::printf("%-28s   Mullapudi2016: %s\n", "", r.mullapudi_note.substr(0, 100).c_str());
    before += r.default_ms * r.groups;
    after += r.best_ms * r.groups;
  }
  if (npu) std::printf("Mullapudi2016: n/a for npu-tile (it schedules host CPUs, not the NPU tile model)\n");
  std::printf("sum over the plan's groups: default %.*f ms, tuned %.*f ms (%.2fx)%s\n", npu ? 4 : 2, before,
              npu ? 4 : 2, after, before / std::max(after, 1e-12), npu ? ", modeled" : "");
}

void print_guard(const std::vector<gaf::tune::GuardedGroup>& groups) {
  int lost = 0;
  for (const auto& r : groups) lost += r.apart;
  std::printf("\nguard: %zu fused groups timed fused and apart: %s\n", groups.size(),
              lost ? (std::to_string(lost) + " slower fused, marked to run apart (GAF-NF030)").c_str()
                   : "every group at least as fast fused");
  for (const auto& r : groups)
    if (r.apart)
      std::printf("  g%d %s: %.3f ms fused, %.3f ms apart\n", r.group, r.label.c_str(), r.fused_ms, r.apart_ms);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gaf-tune: tune the host (or NPU tile model) schedule parameters of a model's fused groups"};
  gaf::cli::ModelArgs model;
  gaf::cli::FusionArgs fusion;
  gaf::cli::CommonArgs common;  // -v/-q, --threads
  model.add_to(&app);
  fusion.add_to(&app);
  common.add_to(&app);
  std::string target = "host", db_path, budget = "10m", npu_target_file;
  gaf::tune::TuneOptions opts;
  bool no_mullapudi = false, no_guard = false;
  app.add_option("--target", target, "host (measured on this CPU), or npu-tile (the NPU simulator's modeled time)")
      ->check(CLI::IsMember({"host", "npu-tile"}))
      ->capture_default_str();
  app.add_option("--npu-target", npu_target_file,
                 "npu-tile: NPU target description (JSON, see schedules/targets/ascend910_like.json); default: the "
                 "built-in one");
  app.add_option("--db", db_path, "schedule database (JSON): created, or continued")->required();
  app.add_option("--budget", budget, "time budget for the whole run: 90s, 10m, 1h")->capture_default_str();
  // Explicit ranges: CLI::PositiveNumber's message quotes the full range of a double.
  app.add_option("--trials", opts.trials, "candidates per group at most")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--group", opts.only_signature, "tune only the group with this signature");
  app.add_option("--seed", opts.seed, "random seed of the search and the inputs")->capture_default_str();
  app.add_option("--repeat", opts.repeat, "timed runs per candidate (median)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_flag("--no-mullapudi", no_mullapudi, "skip the Mullapudi2016 autoscheduler comparison");
  app.add_flag("--no-guard", no_guard,
               "host: skip the guard (every group timed fused and apart after tuning; a group slower fused is "
               "marked in the database, and gaf run / compile with it run its nodes apart, GAF-NF030)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    common.apply();
    const bool npu = target == "npu-tile";
    if (!npu && !npu_target_file.empty()) throw gaf::GafError("--npu-target needs --target npu-tile");
    const gaf::NpuTarget npu_target = npu ? gaf::npu_target_or_default(npu_target_file) : gaf::NpuTarget();
    opts.budget_s = parse_budget(budget);
    opts.mullapudi = !no_mullapudi;
    // Before any tuning: a database that cannot be written would lose every result.
    gaf::check_writable_file(db_path, "--db");
    gaf::ScheduleDb db = gaf::ScheduleDb::load(db_path, /*missing_ok=*/true);

    // Tuned as gaf run runs it: MatMul weights packed for the default tiles (a packed MatMul's
    // tile width is its panel width, whatever `vectors` a candidate has).
    gaf::Engine engine(model.model, gaf::cli::engine_options(model, fusion, common));
    const gaf::FusionPlan& plan = engine.plan();
    const gaf::Graph& g = engine.kernel_graph();
    if (!opts.only_signature.empty()) {
      bool found = false;
      for (const auto& grp : plan.groups) found = found || grp.signature == opts.only_signature;
      if (!found) throw gaf::GafError("--group: no group of " + model.model + " has that signature");
    }
    const std::string target_desc =
        npu ? "npu-tile (" + gaf::npu_machine_key(npu_target) + ")" : "host (" + gaf::host_target().to_string() + ")";
    std::printf("gaf-tune: %s, %zu groups, target %s, budget %.0f s, db %s (%zu entries)\n",
                engine.description().c_str(), plan.groups.size(), target_desc.c_str(), opts.budget_s, db_path.c_str(),
                db.entries().size());
    std::fflush(stdout);

    std::signal(SIGINT, on_interrupt);
    const bool tty = isatty(fileno(stderr));
    size_t last_group = SIZE_MAX;
    auto progress = [&](size_t gi, size_t n, const std::string& label, int trial, int trials, double speedup) {
      if (tty) {
        std::fprintf(stderr, "\r[group %zu/%zu] %-24.24s trial %3d/%-3d best %.2fx   ", gi + 1, n, label.c_str(), trial,
                     trials, speedup);
      } else if (gi != last_group) {
        std::fprintf(stderr, "gaf-tune: group %zu/%zu %s\n", gi + 1, n, label.c_str());
      }
      last_group = gi;
    };
    auto results = npu ? gaf::tune::tune_plan_npu(g, plan, npu_target, db, db_path, opts, g_stop, progress)
                       : gaf::tune::tune_plan(g, plan, db, db_path, opts, g_stop, progress);
    if (tty) std::fprintf(stderr, "\n");
    print_table(results, npu);
    if (!npu && !no_guard && !g_stop) {
      print_guard(gaf::tune::guard_fusion(g, plan, gaf::make_default_inputs(engine.graph(), opts.seed),
                                          std::max(opts.repeat, 5), db));
      db.save(db_path);
    }
    if (g_stop) {
      std::printf("interrupted: what was found so far is in %s\n", db_path.c_str());
      return 130;  // as a shell reports a process stopped by SIGINT
    }
    std::printf("saved %s (%zu entries)\n", db_path.c_str(), db.entries().size());
    return 0;
  } catch (const gaf::GafError& e) {
    std::cerr << "gaf-tune: error: " << e.what() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gaf-tune: internal error: " << e.what() << std::endl;
    return 2;
  }
}
