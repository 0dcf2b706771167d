// gaf explain: one node's story, read from the plan. Fused: its group, the rule that formed it,
// the decision for its Func. Not fused: every refused candidate merge involving it, with the
// reason code and the other node. A node the planner rewrote away (horizontal MatMul) is
// explained through the node that replaced it (FusionPlan::source_nodes).
#pragma once

#include <string>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"

namespace gaf {

// `original`: the graph before the planner's rewrites; `planned`: the graph `plan` is for. `name`
// is a node name, or a part of exactly one node's name. Throws GafError (one line) when no node
// or several nodes match, listing a few candidates.
std::string explain_node(const Graph& original, const Graph& planned, const FusionPlan& plan, const std::string& name);

}  // namespace gaf
