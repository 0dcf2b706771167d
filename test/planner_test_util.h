// Helpers shared by the planner tests: deterministic weights and a graph prepared for planning.
#pragma once

#include <map>
#include <random>
#include <string>

#include "fusion/frontend/passes.h"
#include "generators/reference_executor.h"

namespace gaf::testing {

// v, v + 0.01, ..., v + 0.06, repeating: distinct enough to catch index mix-ups.
inline Tensor filled(Shape s, float v) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v + 0.01f * static_cast<float>(i % 7);
  return t;
}

// Uniform in [-scale, scale), from `seed`.
inline Tensor random_uniform(Shape s, uint32_t seed, float scale = 1.0f) {
  Tensor t(DType::Float32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// prepare_graph's folding through `ex` (which must outlive the evaluator).
inline NodeEvaluator evaluator(ReferenceExecutor& ex) {
  return [&ex](const Node& n, const std::vector<const Tensor*>& in, const std::vector<const TensorDesc*>& t) {
    return ex.run_node(n, in, t);
  };
}

// Shape inference, folding and dead-node removal, as the CLI does before planning.
inline Graph prepared(Graph g, std::map<std::string, int64_t> dims = {}) {
  static ReferenceExecutor folder;
  prepare_graph(g, dims, evaluator(folder));
  return g;
}

}  // namespace gaf::testing
