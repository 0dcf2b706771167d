// The HTML fusion report (gaf report --html): one self-contained file (inline CSS and SVG, no
// scripts, nothing fetched) with the picture, the totals per fusion kind (the seed's table), every
// group (kind, rule, source nodes, Func decisions, predicted bytes saved, measured times with a
// profile) and the refused merges with their reason codes. Repeated layers are folded.
#pragma once

#include <string>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "fusion/planner/plan_profile.h"

namespace gaf {

struct HtmlReportInputs {
  std::string model;                     // how the user named it, with its sizes
  std::string svg;                       // `dot -Tsvg` of fusion_plan_dot(..., fold_repeats)
  std::string svg_note;                  // shown instead of the picture when svg is empty
  const PlanProfile* profile = nullptr;  // measured times (gaf report --profile)
};

std::string fusion_html_report(const Graph& g, const FusionPlan& plan, const HtmlReportInputs& in);

}  // namespace gaf
