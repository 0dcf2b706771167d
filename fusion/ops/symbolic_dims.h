// Dynamic dims through shape inference and folding. Shape inference works on numbers; a node
// that reads a dynamic dim (or contents computed from one) is inferred again at the sampler's
// points (runtime/sym_expr.h) and each output dim is fitted as a polynomial in the symbols.
// Folding stays what it is at the representative point, with two limits: a node whose outputs'
// shapes depend on the symbols is not folded (it runs, e.g. a Range over seq), and a folded
// result that differs between the points is kept only when it is int64 (a shape: its elements
// are fitted too, Value::sym_contents); other varying results are not folded.
#pragma once

#include <vector>

#include <functional>
#include <map>

#include "fusion/ops/registry.h"

namespace gaf {

// Evaluates one node on constant inputs (the executor; injected so that the math stays in the
// op library). prepare_graph's NodeEvaluator is the same type.
using NodeEvaluatorFn = std::function<std::vector<Tensor>(const Node&, const std::vector<const Tensor*>&,
                                                          const std::vector<const TensorDesc*>&)>;

class SymbolicDims {
 public:
  SymbolicDims(const SymbolRanges& dynamic, NodeEvaluatorFn eval = {});

  const SymSampler& sampler() const { return sampler_; }
  // Whether node `idx` reads a symbolic dim or symbolic contents.
  static bool reads_symbolic(const Graph& g, const Node& n);
  // Fits the symbolic dims of node `idx`'s outputs (their types are those at the representative
  // point). Throws GafError naming the node when a dim is not a polynomial in the symbols over
  // their ranges, or when inference fails at another point (a dim the model fixes).
  void fit_outputs(Graph& g, int idx) const;
  // Folding a node that reads symbolic values: `outs` are its results at the representative
  // point. Returns false when the node must not be folded; else fills the outputs'
  // sym_contents where they vary.
  bool fold_symbolic(Graph& g, int idx, const std::vector<Tensor>& outs) const;

 private:
  // Node `idx`'s input types and value-input contents at sample point p.
  struct PointInputs {
    std::vector<TensorDesc> descs;
    std::vector<Tensor> contents;
    std::vector<const TensorDesc*> types;
    std::vector<const Tensor*> values;
  };
  PointInputs inputs_at(const Graph& g, const Node& n, size_t p, bool all_constants) const;

  SymSampler sampler_;
  NodeEvaluatorFn eval_;
};

// The constants whose contents depend on the dynamic dims (Value::sym_contents), evaluated at
// `point` (a run's dims).
std::map<std::string, Tensor> symbolic_constants_at(const Graph& g, const SymBindings& point);

// A copy of `g` typed at `point`: every value's dims and symbolic contents evaluated there (the
// sym_dims stay). Weights are shared, not copied.
Graph typed_at(const Graph& g, const SymBindings& point);

// After a rewrite added nodes (planner rewrites): fits the symbolic dims of every output of a
// node that reads symbolic values, in topological order. No folding.
void propagate_symbolic_dims(Graph& g);

}  // namespace gaf
