// Filling in a group once its members are fixed: external inputs and outputs, the compute
// decision for each member's Func, predicted traffic, and the signature.
#pragma once

#include "fusion/planner/pattern.h"
#include "fusion/planner/plan.h"

namespace gaf {

inline bool is_map_class(OpClass c) {
  return c == OpClass::Elementwise || c == OpClass::Broadcast || c == OpClass::Injective;
}

int64_t value_bytes(const Graph& g, const std::string& value);

// Requires fg.nodes (topological); fills inputs, outputs, decisions, bytes, signature.
void describe_group(const GraphView& v, FusionGroup& fg);

}  // namespace gaf
