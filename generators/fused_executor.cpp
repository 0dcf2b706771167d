#include "generators/fused_executor.h"

#include <algorithm>

namespace gaf {

FusedExecutor::FusedExecutor(const Graph& g, const FusionPlan& plan, const ExecutorOptions& opts)
    : g_(g), plan_(plan), exec_(build_executable(g, plan, "gaf", opts)) {
  runner_ = std::make_unique<PlanRunner>(exec_.plan, exec_.kernels, exec_.weights);
  stats_ = exec_.stats;
  // Profiling a tensor-parallel run: the ranks meet before each group, so that a group's time
  // is its own and not the wait for a rank still busy with the group before (load imbalance is
  // the forward time's, not a group's). Every rank profiles the same plan: same collectives.
  if (Communicator* comm = opts.comm; comm && comm->size() > 1)
    runner_->set_group_hook([comm](size_t s) { comm->barrier("profiling: start of group " + std::to_string(s)); });
  for (const std::string& in : g.inputs())
    if (g.value(in).constant) defaults_.push_back(in);
}

FusedExecutor::~FusedExecutor() = default;

TensorMap FusedExecutor::run(const TensorMap& inputs) {
  TensorMap outputs;
  run(inputs, outputs);
  return outputs;
}

void FusedExecutor::run(const TensorMap& inputs, TensorMap& outputs) {
  check_graph_inputs(g_, inputs);
  bool complete = true;
  for (const std::string& in : defaults_) complete = complete && inputs.count(in);
  if (complete) {
    runner_->run(inputs, outputs);
  } else {  // the defaults of the inputs not given
    TensorMap given = inputs;
    for (const std::string& in : defaults_) given.emplace(in, *g_.value(in).constant);
    runner_->run(given, outputs);
  }
  stats_.peak_bytes = runner_->peak_bytes();
}

std::vector<Tensor> FusedExecutor::run_group(size_t s, const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> computed = runner_->run_group(s, inputs);
  // The kernel computes the outputs that are not zero-sized (AotGroup::kernel_outputs).
  std::vector<Tensor> outs;
  size_t k = 0;
  for (const std::string& o : plan_.groups.at(s).outputs) {
    if (o.empty()) {
      outs.emplace_back();
      continue;
    }
    const TensorType& t = g_.value(o).type;
    if (shape_numel(t.shape()) > 0)
      outs.push_back(computed.at(k++));
    else
      outs.push_back(Tensor::uninitialized(t.dtype, t.shape()));
  }
  return outs;
}

std::vector<std::string> FusedExecutor::npu_tiles(size_t s) const {
  return exec_.plan.kernels.at(exec_.numbering.kernel_of(0, s)).npu_tiles;
}

}  // namespace gaf
