#include "generators/group_kernel.h"

#include "generators/group_pipeline.h"
#include "generators/halide_buffers.h"
#include "schedules/host_target.h"

namespace gaf {

namespace {

// The group's pipeline (group_pipeline.h, shared with AOT) JIT-compiled for the host.
int32_t npu_trace(Halide::JITUserContext*, const halide_trace_event_t* e) { return NpuSimulator::on_event(e); }

class JitGroupKernel : public GroupKernel {
 public:
  JitGroupKernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts)
      : id_(grp.id), dynamic_(g.dynamic) {
    holder_ = lower_group_pipeline(g, grp, opts, host_target(), [&](GroupPipeline& p) {
      // NPU kernels report their staging copies to the simulator (npu_sim.h).
      if (opts.source == ScheduleSource::NpuTile) p.pipeline().jit_handlers().custom_trace = npu_trace;
      p.pipeline().compile_jit(host_target());
    }, fallback_);
  }
  const std::string& schedule_fallback() const override { return fallback_; }

  const std::vector<TensorDesc>& output_descs() const override { return holder_->output_descs(); }
  const NpuStageMap* npu_stages() const override { return holder_->npu() ? &holder_->npu()->stages : nullptr; }
  std::vector<std::string> npu_tiles() const override { return holder_->npu() ? holder_->npu()->tiles : std::vector<std::string>{}; }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, const SymBindings& dims) override {
    size_t i = 0;
    const SymBindings upper = dims.empty() ? upper_bounds(dynamic_) : SymBindings{};
    for (const auto& [name, range] : dynamic_) {
      // No dims given: the graph's own point, the upper bounds (gaf-tune times groups there).
      auto it = dims.empty() ? upper.find(name) : dims.find(name);
      if (it == (dims.empty() ? upper.end() : dims.end()))
        throw GafError("fused kernel g" + std::to_string(id_) + ": no value for dim '" + name + "'");
      holder_->symbols()[i++].set(static_cast<int32_t>(it->second));
    }
    realize_into(holder_->pipeline(), holder_->params(), inputs, holder_->computed(), outputs,
                 "fused kernel g" + std::to_string(id_));
  }

 private:
  int id_;
  SymbolRanges dynamic_;
  std::unique_ptr<GroupPipeline> holder_;
  std::string fallback_;
};

}  // namespace

std::unique_ptr<GroupKernel> compile_group_kernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts) {
  return std::make_unique<JitGroupKernel>(g, grp, opts);
}

}  // namespace gaf
