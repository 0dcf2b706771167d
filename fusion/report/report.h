// Reports read from a FusionPlan (nothing here re-derives a planner decision): the
// [GRAPH_AUTOFUSION] log lines, the text table of `gaf plan`, the JSON document and DOT graph.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "fusion/planner/plan_profile.h"

namespace gaf {

// How much of a long plan the text forms print: by default one screen (rewrites one line per
// kind, repeated layers folded into one line, the first refusals); `full` lists everything.
struct TextDetail {
  bool full = false;
  size_t refusals = 5;  // refusals printed in full when not `full`
};
// "[GRAPH_AUTOFUSION] Detected 12 MatMul+GELU fusion opportunities" ... "Applied 24/24 fusions".
std::string fusion_log_lines(const Graph& g, const FusionPlan& plan, const TextDetail& detail = {});
// Groups table, totals per kind (the seed's table), refused candidates.
std::string fusion_text_report(const Graph& g, const FusionPlan& plan, const TextDetail& detail = {});
// The JSON document (schema in docs/USER_GUIDE.md, "Plan JSON"); with a profile, its "profile".
nlohmann::json fusion_plan_json(const Graph& g, const FusionPlan& plan, const PlanProfile* profile = nullptr);

struct DotOptions {
  bool fold_repeats = false;  // draw one block of repeated layers, the others as one box
};
// Graphviz DOT: nodes, fused groups as coloured clusters by kind, refused merges as dashed red edges.
std::string fusion_plan_dot(const Graph& g, const FusionPlan& plan, const DotOptions& opts = {});
const char* fusion_kind_colour(FusionKind k);  // the clusters' fill colour, "#rrggbb"

// The seed's table: per fusion kind, fusions (groups of 2+ ops), bytes and launches saved, and
// with a profile the measured time saved. Keyed by fusion_kind_name.
struct KindTotal {
  int count = 0;
  int64_t bytes_saved = 0;
  int launches_saved = 0;
  double ms_saved = 0;  // with a profile
};
std::map<std::string, KindTotal> fusion_totals(const FusionPlan& plan, const PlanProfile* profile = nullptr);

}  // namespace gaf
