// One fused group's algorithm and schedule as a Halide Pipeline, built once and then either
// JIT-compiled (group_kernel.cpp) or compiled ahead of time to an object file (aot_compiler.cpp):
// both use exactly this algorithm and this schedule. Includes Halide.h: for generator files only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "fusion/ops/op_builder.h"
#include "generators/group_kernel.h"
#include "schedules/fused_schedule.h"
#include "schedules/npu_schedule.h"

namespace gaf {

class GroupPipeline {
 public:
  // The group's members composed (or its rule's generate step), the fused host schedule with
  // `opts.params` applied for `target` (or Mullapudi2016's, or with NpuTile the NPU tile model's
  // for `opts.npu`, with `opts.npu_params`' tile overrides). Throws Halide::CompileError, or
  // GafError when an NPU tile cannot fit or an override is illegal.
  GroupPipeline(const Graph& g, const FusionGroup& grp, const KernelOptions& opts, const Halide::Target& target);

  // False when every output is zero-sized: nothing to compute, no pipeline.
  bool has_pipeline() const { return !computed_.empty(); }
  Halide::Pipeline& pipeline() { return pipeline_; }
  // One per group input (FusionGroup::inputs order); undefined where the algorithm never reads
  // the input (e.g. a shape-only input).
  std::vector<Halide::ImageParam>& params() { return params_; }
  // The AOT argument list: every group input in order (an unread input still gets a buffer
  // argument, so the signature is the same for every group), then the dynamic dims as int32
  // scalars (Graph::dynamic's order, every one of them whether the group reads it or not), then
  // the computed outputs.
  std::vector<Halide::Argument> arguments();
  // The dynamic dims' parameters (Graph::dynamic's order); empty for a static graph. Callers
  // set them to the run's dims.
  std::vector<Halide::Param<int32_t>>& symbols() { return symbols_; }
  // Output descs in FusionGroup::outputs order, and the indices of those computed (non-empty).
  const std::vector<TensorDesc>& output_descs() const { return outs_; }
  const std::vector<int>& computed() const { return computed_; }
  // With ScheduleSource::NpuTile: the stage map for the simulator and the tiles chosen.
  const NpuSchedule* npu() const { return npu_ ? &*npu_ : nullptr; }

 private:
  TensorFunc input(const Graph& g, const FusionGroup& grp, int k);
  std::vector<TensorFunc> compose_members(const Graph& g, const FusionGroup& grp, std::vector<MemberFuncs>& members);
  // Dense row-major with mins 0: constant extents and strides where the shape is static, the
  // dims' expressions where it is symbolic.
  void constrain_dense(Halide::OutputImageParam buf, const Value& v, bool output) const;
  // The value's extents in the symbols' parameters (ONNX order); empty when it is static.
  std::vector<Halide::Expr> extents_of(const Value& v) const;
  std::vector<Halide::Expr> exprs_of(const std::vector<SymExpr>& e) const;
  void autoschedule_mullapudi(const std::vector<TensorFunc>& outputs, const Halide::Target& target);

  std::vector<std::unique_ptr<InferContext>> infers_;
  std::vector<std::unique_ptr<std::vector<TensorDesc>>> descs_;
  std::vector<TensorDesc> outs_;
  std::vector<TensorDesc> in_descs_;
  std::vector<Value> in_values_;  // type and sym_dims of each input (no contents): arguments() needs them
  std::vector<Halide::ImageParam> params_;
  std::vector<int> computed_;
  std::vector<Halide::Func> out_funcs_;
  std::vector<Halide::Param<int32_t>> symbols_;
  std::map<std::string, Halide::Expr> symbol_exprs_;
  std::string param_name(size_t k) const;

  int id_ = -1;
  bool npu_source_ = false;
  Halide::Pipeline pipeline_;
  std::optional<NpuSchedule> npu_;
};

// Builds group `grp`'s pipeline and lowers it with `lower` (compile_jit, compile_to, ...). With
// dynamic dims Halide may fail to lower the host schedule (a register tile whose rows it cannot
// prove a constant count through symbolic index arithmetic, e.g. a batch dim and seq both
// dynamic); the group then gets the reference schedule — correct at every size, slower — and
// `fallback` says why. Other compile errors throw GafError naming the group.
std::unique_ptr<GroupPipeline> lower_group_pipeline(const Graph& g, const FusionGroup& grp, const KernelOptions& opts,
                                                    const Halide::Target& target,
                                                    const std::function<void(GroupPipeline&)>& lower,
                                                    std::string& fallback);

}  // namespace gaf
