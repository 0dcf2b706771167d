// The unfused reference executor: every node is its own Halide pipeline under the reference
// schedule, run in topological order. Intermediates are freed after their last use; identical
// nodes share one compiled kernel. Everything fused is checked against this.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/ir/graph.h"
#include "generators/node_kernel.h"
#include "runtime/communicator.h"

namespace gaf {

using TensorMap = std::map<std::string, Tensor>;

// Largest |a - b| / max(1, |b|) over every tensor of `a` (b must hold the same names).
double max_rel_diff(const TensorMap& a, const TensorMap& b);

struct ExecStats {
  int kernels_compiled = 0;
  int kernel_cache_hits = 0;
  double compile_seconds = 0;
  size_t peak_bytes = 0;  // peak bytes of live intermediates + outputs (weights excluded)
  int tuned_groups = 0;   // groups compiled with parameters from a schedule database
  // Fused executor with dynamic dims: "g<id> (<size class>): <Halide's reason>" per kernel that
  // fell back to the reference schedule (lower_group_pipeline).
  std::vector<std::string> schedule_fallbacks;
};

// Checks `inputs` against the graph's declared inputs (names, dtypes, ranks, static extents, and
// symbols bound consistently). Throws GafError naming the tensor. Returns symbol bindings seen.
std::map<std::string, int64_t> check_graph_inputs(const Graph& g, const TensorMap& inputs);

class ReferenceExecutor {
 public:
  // Runs the graph on `inputs` (graph inputs by name) and returns every graph output.
  TensorMap run(const Graph& g, const TensorMap& inputs);
  // Evaluates one node on given input tensors (used for constant folding).
  std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& inputs,
                               const std::vector<const TensorDesc*>& types);
  // Evaluates one node on the tensors of its inputs (null for an omitted optional input).
  std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& inputs);

  const ExecStats& stats() const { return stats_; }
  void reset_stats() { stats_ = ExecStats(); }
  // The ranks collectives across more than one rank run on (null: none may appear).
  void set_communicator(Communicator* comm) { comm_ = comm; }

 private:
  NodeKernel& kernel_for(const OpSchema& schema, const Node& node, const std::vector<const TensorDesc*>& types,
                         const std::vector<const Tensor*>& values);
  std::unordered_map<std::string, std::unique_ptr<NodeKernel>> cache_;
  ExecStats stats_;
  Communicator* comm_ = nullptr;
};

}  // namespace gaf
