#include "generators/group_kernel.h"

#include "generators/comm_kernel.h"
#include "generators/direct_call.h"
#include "generators/fp16_guard.h"
#include "generators/group_pipeline.h"
#include "generators/halide_buffers.h"
#include "generators/weight_packing.h"
#include "schedules/host_target.h"

namespace gaf {

namespace {

// The group's pipeline (group_pipeline.h, shared with AOT) JIT-compiled for the host.
int32_t npu_trace(Halide::JITUserContext*, const halide_trace_event_t* e) { return NpuSimulator::on_event(e); }

// The target of the group's kernel: a member MatMul on bf16- or int8-packed weights (--precision
// bf16, int8) wants its dot-product instruction (vdpbf16ps, vpdpbusd).
Halide::Target group_target(const Graph& g, const FusionGroup& grp) {
  const DType w = packed_dot_weights(g, grp.nodes);
  return w == DType::Float32 ? host_target() : dot_product_target(w);
}

class JitGroupKernel : public GroupKernel {
 public:
  JitGroupKernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts) : id_(grp.id), dynamic_(g.dynamic) {
    const Halide::Target target = group_target(g, grp);
    holder_ = lower_group_pipeline(
        g, grp, opts, target,
        [&](GroupPipeline& p) {
          // NPU kernels report their staging copies to the simulator (npu_sim.h).
          if (opts.source == ScheduleSource::NpuTile) p.pipeline().jit_handlers().custom_trace = npu_trace;
          const bool guard = target.has_feature(Halide::Target::AVX512_SapphireRapids) && !cpu_has_avx512_fp16();
          const Halide::Target t = guard ? fp16_safe_target(p.pipeline(), p.arguments(), target) : target;
          // Host kernels are called directly (direct_call.h); NPU kernels through realize, which
          // routes their trace to the simulator.
          if (opts.source == ScheduleSource::NpuTile)
            p.pipeline().compile_jit(t);
          else
            direct_ = DirectCall(p.pipeline(), p.arguments(), t, "gaf_g" + std::to_string(grp.id));
        },
        fallback_);
  }
  const std::string& schedule_fallback() const override { return fallback_; }
  int run_argv(void** args, size_t n_inputs, const std::vector<std::string>& dim_names) override {
    if (!direct_.defined()) return GroupKernel::run_argv(args, n_inputs, dim_names);
    direct_.call_argv(args, what_);
    return 0;
  }

  const std::vector<TensorDesc>& output_descs() const override { return holder_->output_descs(); }
  const NpuStageMap* npu_stages() const override { return holder_->npu() ? &holder_->npu()->stages : nullptr; }
  std::vector<std::string> npu_tiles() const override {
    return holder_->npu() ? holder_->npu()->tiles : std::vector<std::string>{};
  }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, const SymBindings& dims) override {
    size_t i = 0;
    const SymBindings upper = dims.empty() ? upper_bounds(dynamic_) : SymBindings{};
    for (const auto& [name, range] : dynamic_) {
      // No dims given: the graph's own point, the upper bounds (gaf-tune times groups there).
      auto it = dims.empty() ? upper.find(name) : dims.find(name);
      if (it == (dims.empty() ? upper.end() : dims.end()))
        throw GafError("fused kernel g" + std::to_string(id_) + ": no value for dim '" + name + "'");
      if (direct_.defined())
        scalars_[i++] = static_cast<int32_t>(it->second);
      else
        holder_->symbols()[i++].set(static_cast<int32_t>(it->second));
    }
    if (direct_.defined()) {
      outs_.clear();
      for (int k : holder_->computed()) outs_.push_back(&outputs[k]);
      direct_.call(inputs, scalars_, outs_, what_);
      return;
    }
    realize_into(holder_->pipeline(), holder_->params(), inputs, holder_->computed(), outputs, what_);
  }

 private:
  int id_;
  SymbolRanges dynamic_;
  std::unique_ptr<GroupPipeline> holder_;
  std::string fallback_;
  DirectCall direct_;
  std::string what_ = "fused kernel g" + std::to_string(id_);
  std::vector<int32_t> scalars_ = std::vector<int32_t>(dynamic_.size());
  std::vector<Tensor*> outs_;
};

}  // namespace

int GroupKernel::run_argv(void** args, size_t n_inputs, const std::vector<std::string>& dim_names) {
  size_t a = 0;
  std::vector<Tensor> views;  // the inputs', then the outputs' storage
  views.reserve(n_inputs);
  std::vector<const Tensor*> inputs;
  for (size_t k = 0; k < n_inputs; ++k, ++a) {
    if (!args[a]) {
      inputs.push_back(nullptr);
      continue;
    }
    views.push_back(tensor_view_of(*static_cast<halide_buffer_t*>(args[a])));
    inputs.push_back(&views.back());
  }
  SymBindings dims;
  for (const std::string& d : dim_names) dims[d] = *static_cast<int32_t*>(args[a++]);
  std::vector<Tensor> outputs;
  for (const TensorDesc& d : output_descs())  // a zero-sized output is no argument
    outputs.push_back(shape_numel(d.shape) == 0 ? Tensor::uninitialized(d.dtype, d.shape)
                                                : tensor_view_of(*static_cast<halide_buffer_t*>(args[a++])));
  run(inputs, outputs, dims);
  return 0;
}

std::unique_ptr<GroupKernel> compile_group_kernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts) {
  if (needs_communicator(g, grp)) return compile_comm_group_kernel(g, grp, opts);
  return std::make_unique<JitGroupKernel>(g, grp, opts);
}

}  // namespace gaf
