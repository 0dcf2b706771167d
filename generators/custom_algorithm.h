// The generate steps of custom fusion rules: rule name -> a function returning the fused group's
// algorithm as Halide Funcs. compile_group_kernel asks here for every Custom group; a rule with
// no generate step keeps the default composition of its members' algorithms.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/ops/op_builder.h"
#include "fusion/planner/plan.h"

namespace gaf {

// `inputs[k]` is group input k (FusionGroup::inputs order, constants included) with its dtype and
// shape; the result is one TensorFunc per FusionGroup::outputs entry, in that order.
using GenerateFn = std::function<std::vector<TensorFunc>(const std::vector<TensorFunc>& inputs, const Graph& g,
                                                         const FusionGroup& grp)>;

// Process-wide, keyed by rule name; the latest registration of a name wins (an empty `fn`
// removes the name's generate step).
void set_custom_algorithm(const std::string& rule, GenerateFn fn);
// The generate step for `grp` (a copy: the registry may change meanwhile), empty when the group
// is not Custom or its rule has none.
GenerateFn find_custom_algorithm(const FusionGroup& grp);

// Runs the generate step and checks its outputs against the group's outputs in the graph (count,
// dtype, shape, Func dimensions): GafError naming the rule and the node otherwise.
std::vector<TensorFunc> run_custom_algorithm(const GenerateFn& fn, const std::vector<TensorFunc>& inputs,
                                             const Graph& g, const FusionGroup& grp);

// For generate steps: a tensor whose element at (ONNX-order) index v is body(v), cast to dtype.
TensorFunc define_tensor(const std::string& name, DType dtype, const Shape& shape,
                         const std::function<Halide::Expr(const std::vector<Halide::Var>&)>& body);

}  // namespace gaf
