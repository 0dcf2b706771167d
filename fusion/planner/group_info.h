// Filling in a group once its members are fixed: external inputs and outputs, the compute
// decision for each member's Func, predicted traffic, and the signature.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "fusion/planner/pattern.h"
#include "fusion/planner/plan.h"

namespace gaf {

inline bool is_map_class(OpClass c) {
  return c == OpClass::Elementwise || c == OpClass::Broadcast || c == OpClass::Injective;
}

int64_t value_bytes(const Graph& g, const std::string& value);

// `value` is used outside the node set `inside` (or is a graph output).
bool escapes(const GraphView& v, const std::set<int>& inside, const std::string& value);

// How each member output of a group is computed: `nodes` in topological order, `outputs` the
// values that leave the group (root). See docs/USER_GUIDE.md, "Decisions".
std::vector<FuncDecision> member_decisions(const GraphView& v, const std::vector<int>& nodes,
                                           const std::vector<std::string>& outputs);

// Bytes of the buffers a group of `nodes` (any order) computes at root without them leaving the
// group: Halide allocates them inside the pipeline for the whole run of the group.
int64_t internal_root_bytes(const GraphView& v, std::vector<int> nodes);

// Requires fg.nodes (topological); fills inputs, outputs, decisions, bytes, signature and the
// kernel spec.
void describe_group(const GraphView& v, FusionGroup& fg);

// The kernel spec of a group whose nodes, roles, inputs and outputs are set (kernel_spec.cpp);
// its label is fg.kernel.label when the rule gave one.
KernelSpec describe_kernel(const GraphView& v, const FusionGroup& fg);

}  // namespace gaf
