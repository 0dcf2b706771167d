// gaf-tune --target npu-tile: the host tuner's search (search_loop.h) with the NPU simulator's
// modeled time as the cost. See tuner.h.
#include <chrono>
#include <cstdio>

#include "apps/gaf-tune/group_timer.h"
#include "apps/gaf-tune/ranked_groups.h"
#include "apps/gaf-tune/npu_search_space.h"
#include "apps/gaf-tune/search_loop.h"
#include "apps/gaf-tune/tuner.h"
#include "fusion/report/report.h"

#include <spdlog/spdlog.h>

namespace gaf::tune {

std::vector<GroupResult> tune_plan_npu(const Graph& g, const FusionPlan& plan, const NpuTarget& npu, ScheduleDb& db,
                                       const std::string& db_path, const TuneOptions& opts,
                                       const std::atomic<bool>& stop, const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const std::string machine = npu_machine_key(npu);
  // The default tiles' modeled times rank the groups; their outputs are every candidate's reference.
  RankedGroups ranked = rank_groups(g, plan, opts, 1, stop, [&](GroupTimer& timer, GroupResult& r) {
    r.mullapudi_note = "does not apply to npu-tile";
    r.default_ms = r.best_ms = timer.model_npu_default(npu).ms;
    r.best = NpuScheduleParams{}.str();
  });
  std::vector<GroupResult>& results = ranked.results;

  BudgetShares shares(ranked.weight_total);
  std::mt19937 rng(opts.seed);
  for (size_t gi = 0; gi < results.size() && !stop; ++gi) {
    GroupResult& r = results[gi];
    const FusionGroup& grp = *ranked.distinct.at(r.signature).group;
    GroupTimer& timer = *ranked.timers.at(r.signature);
    const double group_deadline = elapsed() + shares.next(r.default_ms * r.groups, opts.budget_s - elapsed());

    NpuScheduleParams best;  // the default: every tile the schedule's own choice
    if (const TunedSchedule* old = db.find(r.signature, "npu-tile", machine)) {
      // Resume: an earlier run's point (its trials count against this run's), re-modeled.
      r.trials = old->trials;
      if (old->trials >= opts.trials) {
        r.resumed = true;
        r.best_ms = old->best_ms;
        r.best = old->npu.str();
        continue;
      }
      Measurement m = timer.model_npu(npu, old->npu);
      if (m.ok && m.ms < r.best_ms) {
        best = old->npu;
        r.best_ms = m.ms;
      }
    }
    auto measure = [&](const NpuScheduleParams& p) -> std::optional<double> {
      ++r.trials;
      Measurement m = timer.model_npu(npu, p);
      if (!m.ok) {
        ++r.rejected;
        // Illegal overrides (no tiles: refused before compiling) are expected while searching:
        // said only at -v. Wrong outputs are not.
        if (m.tiles.empty())
          spdlog::debug("gaf-tune: rejected {} for {}: {}", p.str(), r.label, m.problem);
        else
          std::fprintf(stderr, "gaf-tune: rejected %s for %s: %s\n", p.str().c_str(), r.label.c_str(),
                       m.problem.c_str());
      }
      progress(gi, results.size(), r.label, r.trials, opts.trials,
               r.default_ms / std::max(m.ok ? std::min(r.best_ms, m.ms) : r.best_ms, 1e-12));
      if (!m.ok) return std::nullopt;
      return m.ms;
    };
    auto more = [&] { return !stop && r.trials < opts.trials && elapsed() < group_deadline; };
    NpuSearchSpace space(g, grp, npu);
    search_points(space, best, r.best_ms, opts.trials, rng, measure, more);

    r.best = best.str();
    TunedSchedule entry;
    entry.signature = r.signature;
    entry.target = "npu-tile";
    entry.machine = machine;
    entry.label = r.label;
    entry.npu = best;
    entry.default_ms = r.default_ms;
    entry.best_ms = r.best_ms;
    entry.trials = r.trials;
    entry.date = today();
    db.put(entry);
    db.save(db_path);  // after every group: an interrupt loses at most the group in progress
  }
  return results;
}

}  // namespace gaf::tune
