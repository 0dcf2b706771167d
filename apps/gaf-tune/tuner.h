// gaf-tune's search over a planned model: each distinct group signature once, heaviest first
// (default time x number of groups sharing it), each within its share of the time budget: the
// default point, random legal points, then the neighbours of the best until nothing improves.
// The database is saved after every group, so an interrupted run keeps what it found and a
// rerun continues where it stopped.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "runtime/npu_target.h"
#include "schedules/schedule_db.h"

namespace gaf::tune {

struct TuneOptions {
  double budget_s = 600;  // whole run
  int trials = 64;        // candidates per group at most (the default point included)
  uint32_t seed = 0;
  int repeat = 7;              // timed runs per candidate (median)
  std::string only_signature;  // tune just this group signature (empty: all)
  bool mullapudi = true;       // also time Halide's Mullapudi2016 autoscheduler per group
};

struct GroupResult {
  std::string signature, label;
  int groups = 0;  // groups in the plan sharing the signature
  double default_ms = 0, best_ms = 0;
  double mullapudi_ms = -1;  // -1: not measured or failed (see mullapudi_note)
  std::string mullapudi_note;
  std::string best;  // the chosen parameters
  int trials = 0, rejected = 0;
  bool resumed = false;  // found complete in the database, not re-measured
};

// Progress callback: (group index, groups, label, trial, trials, best speed-up so far).
using ProgressFn = std::function<void(size_t, size_t, const std::string&, int, int, double)>;

std::vector<GroupResult> tune_plan(const Graph& g, const FusionPlan& plan, ScheduleDb& db, const std::string& db_path,
                                   const TuneOptions& opts, const std::atomic<bool>& stop, const ProgressFn& progress);

// --target npu-tile (npu_tuner.cpp): the same search over the NPU tile overrides (npu_params.h);
// a candidate's cost is the simulator's modeled time of the group run once (the counts are
// deterministic), its outputs checked against the default tiles'. Entries are stored
// for target "npu-tile" and npu_machine_key(npu); times in GroupResult are modeled ms.
// opts.repeat and opts.mullapudi do not apply.
std::vector<GroupResult> tune_plan_npu(const Graph& g, const FusionPlan& plan, const NpuTarget& npu, ScheduleDb& db,
                                       const std::string& db_path, const TuneOptions& opts,
                                       const std::atomic<bool>& stop, const ProgressFn& progress);

}  // namespace gaf::tune
