#include "apps/gaf-tune/tuner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "apps/gaf-tune/group_timer.h"
#include "apps/gaf-tune/ranked_groups.h"
#include "apps/gaf-tune/search_loop.h"
#include "apps/gaf-tune/search_space.h"
#include "fusion/ops/registry.h"
#include "fusion/report/report.h"
#include "schedules/host_target.h"

namespace gaf::tune {

namespace {

using Clock = std::chrono::steady_clock;

bool has_matmul(const Graph& g, const FusionGroup& grp) {
  for (int n : grp.nodes)
    if (OpRegistry::global().get(g.nodes()[n]).op_class == OpClass::MatMul) return true;
  return false;
}

HostScheduleParams params_of(HostScheduleParams base, const Candidate& c) {
  base.matmul = c.matmul;
  base.rows = c.rows;
  return base;
}

// Runs f with stderr silenced: Halide's autoscheduler prints a warning per Func it cannot
// vectorise the way it planned, dozens per group, which would bury the tuner's own output.
template <typename F>
auto quietly(F f) {
  std::fflush(stderr);
  int saved = dup(2);
  int devnull = open("/dev/null", O_WRONLY);
  if (saved >= 0 && devnull >= 0) dup2(devnull, 2);
  auto restore = [&] {
    if (saved >= 0) {
      dup2(saved, 2);
      close(saved);
    }
    if (devnull >= 0) close(devnull);
  };
  try {
    auto r = f();
    restore();
    return r;
  } catch (...) {
    restore();
    throw;
  }
}

}  // namespace

std::vector<GroupResult> tune_plan(const Graph& g, const FusionPlan& plan, ScheduleDb& db, const std::string& db_path,
                                   const TuneOptions& opts, const std::atomic<bool>& stop, const ProgressFn& progress) {
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const HostScheduleParams defaults = host_params_for(host_target());
  const std::string machine = host_machine_key();
  const int registers = vector_registers(host_target());

  // Default times first: they rank the groups and are every candidate's baseline.
  RankedGroups ranked = rank_groups(g, plan, opts, opts.repeat, stop, [&](GroupTimer& timer, GroupResult& r) {
    r.default_ms = r.best_ms = timer.measure_default(defaults).ms;
  });
  std::vector<GroupResult>& results = ranked.results;

  BudgetShares shares(ranked.weight_total);
  std::mt19937 rng(opts.seed);
  for (size_t gi = 0; gi < results.size() && !stop; ++gi) {
    GroupResult& r = results[gi];
    const FusionGroup& grp = *ranked.distinct.at(r.signature).group;
    GroupTimer& timer = *ranked.timers.at(r.signature);
    const double group_deadline = elapsed() + shares.next(r.default_ms * r.groups, opts.budget_s - elapsed());

    SearchSpace space(has_matmul(g, grp), registers);
    Candidate best{defaults.matmul, defaults.rows};
    TunedSchedule entry;
    entry.signature = r.signature;
    entry.target = "host";
    entry.machine = machine;
    entry.label = r.label;
    entry.default_ms = r.default_ms;
    if (const TunedSchedule* old = db.find(r.signature, "host", machine)) {
      // Resume: start from what an earlier run found; its trials count against this run's.
      best = Candidate{old->matmul, old->rows};
      r.trials = old->trials;
      if (old->trials >= opts.trials) {
        r.resumed = true;
        r.best_ms = old->best_ms;
        r.default_ms = old->default_ms;
        r.best = best.str();
        continue;
      }
      Measurement m = timer.measure(params_of(defaults, best));
      if (m.ok) r.best_ms = std::min(r.best_ms, m.ms);
    }
    auto measure = [&](const Candidate& c) -> std::optional<double> {
      ++r.trials;
      Measurement m = timer.measure(params_of(defaults, c));
      if (!m.ok) {
        ++r.rejected;
        std::fprintf(stderr, "gaf-tune: rejected %s for %s: %s\n", c.str().c_str(), r.label.c_str(), m.problem.c_str());
      }
      progress(gi, results.size(), r.label, r.trials, opts.trials,
               r.default_ms / std::max(m.ok ? std::min(r.best_ms, m.ms) : r.best_ms, 1e-9));
      if (!m.ok) return std::nullopt;
      return m.ms;
    };
    auto more = [&] { return !stop && r.trials < opts.trials && elapsed() < group_deadline; };
    search_points(space, best, r.best_ms, opts.trials, rng, measure, more);
    if (!(best == Candidate{defaults.matmul, defaults.rows}) && !stop) {
      // Re-measure the winner against the default, alternately; keep it only if it still wins.
      auto [d_ms, b_ms] = timer.confirm(defaults, params_of(defaults, best), 3);
      r.default_ms = d_ms;
      r.best_ms = b_ms;
      if (b_ms >= d_ms) {
        best = Candidate{defaults.matmul, defaults.rows};
        r.best_ms = d_ms;
      }
    }
    r.best = best.str();
    entry.default_ms = r.default_ms;
    entry.matmul = best.matmul;
    entry.rows = best.rows;
    entry.best_ms = r.best_ms;
    entry.trials = r.trials;
    entry.date = today();
    db.put(entry);
    db.save(db_path);  // after every group: an interrupt loses at most the group in progress
  }

  if (opts.mullapudi)
    for (GroupResult& r : results) {
      if (stop) break;
      Measurement m =
          quietly([&] { return ranked.timers.at(r.signature)->measure(defaults, ScheduleSource::Mullapudi2016); });
      if (m.ok)
        r.mullapudi_ms = m.ms;
      else
        r.mullapudi_note = m.problem.substr(0, m.problem.find('\n'));
    }
  return results;
}

}  // namespace gaf::tune
