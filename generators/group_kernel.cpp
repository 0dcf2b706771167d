#include "generators/group_kernel.h"

#include "generators/group_pipeline.h"
#include "generators/halide_buffers.h"
#include "schedules/host_target.h"

namespace gaf {

namespace {

// The group's pipeline (group_pipeline.h, shared with AOT) JIT-compiled for the host.
class JitGroupKernel : public GroupKernel {
 public:
  JitGroupKernel(const Graph& g, const FusionGroup& grp, const HostScheduleParams& params,
                 ScheduleSource source)
      : id_(grp.id), p_(g, grp, params, source, host_target()) {
    if (p_.has_pipeline()) p_.pipeline().compile_jit(host_target());
  }

  const std::vector<TensorDesc>& output_descs() const override { return p_.output_descs(); }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) override {
    realize_into(p_.pipeline(), p_.params(), inputs, p_.computed(), outputs,
                 "fused kernel g" + std::to_string(id_));
  }

 private:
  int id_;
  GroupPipeline p_;
};

}  // namespace

std::unique_ptr<GroupKernel> compile_group_kernel(const Graph& g, const FusionGroup& grp,
                                                  const HostScheduleParams& params, ScheduleSource source) {
  try {
    return std::make_unique<JitGroupKernel>(g, grp, params, source);
  } catch (const Halide::CompileError& e) {
    throw GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                   "): Halide compile error: " + std::string(e.what()));
  }
}

}  // namespace gaf
