// Reports read from a FusionPlan (nothing here re-derives a planner decision): the
// [GRAPH_AUTOFUSION] log lines, the text table of `gaf plan`, the JSON document and DOT graph.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf {

// "[GRAPH_AUTOFUSION] Detected 12 MatMul+GELU fusion opportunities" ... "Applied 24/24 fusions".
std::string fusion_log_lines(const Graph& g, const FusionPlan& plan);
// Groups table, totals per kind (the seed's table), refused candidates.
std::string fusion_text_report(const Graph& g, const FusionPlan& plan);
// The JSON document (schema in docs/USER_GUIDE.md, "Plan JSON").
nlohmann::json fusion_plan_json(const Graph& g, const FusionPlan& plan);
// Graphviz DOT: nodes, fused groups as coloured clusters by kind, refused merges as dashed red edges.
std::string fusion_plan_dot(const Graph& g, const FusionPlan& plan);

// A short human label for a group: "MatMul+GELU", "LayerNorm", "Softmax", "elementwise x3".
std::string group_label(const Graph& g, const FusionGroup& grp);

}  // namespace gaf
