#include "generators/group_kernel.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "fusion/ops/op_builder.h"
#include "generators/custom_algorithm.h"
#include "generators/halide_buffers.h"
#include "schedules/fused_schedule.h"
#include "schedules/host_target.h"

namespace gaf {

using namespace Halide;

namespace {

class JitGroupKernel : public GroupKernel {
 public:
  JitGroupKernel(const Graph& g, const FusionGroup& grp, const HostScheduleParams& params,
                 ScheduleSource source)
      : id_(grp.id) {
    params_.resize(grp.inputs.size());
    std::vector<MemberFuncs> members;  // stays empty for a generate step: its Funcs are its own
    std::vector<TensorFunc> outputs;
    if (GenerateFn gen = find_custom_algorithm(grp)) {
      std::vector<TensorFunc> ins;
      for (size_t k = 0; k < grp.inputs.size(); ++k) ins.push_back(input(g, grp, static_cast<int>(k)));
      outputs = run_custom_algorithm(gen, ins, g, grp);
    } else {
      outputs = compose_members(g, grp, members);
    }

    std::vector<Func> funcs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const TensorFunc& t = outputs[k];
      outs_.push_back(TensorDesc{t.dtype, t.shape});
      if (shape_numel(t.shape) == 0) continue;  // zero-sized outputs are not computed
      computed_.push_back(static_cast<int>(k));
      funcs.push_back(t.func);
    }
    if (funcs.empty()) return;
    const TensorFunc* anchor = outputs.size() == 1 ? &outputs[0] : nullptr;
    if (source == ScheduleSource::Host) apply_fused_schedule(outputs, anchor, members, params);
    pipeline_ = Pipeline(funcs);
    if (source == ScheduleSource::Mullapudi2016) autoschedule_mullapudi(outputs);
    if (std::getenv("GAF_PRINT_LOOP_NEST")) {  // schedule debugging: the loop nest Halide lowers
      std::fprintf(stderr, "loop nest of group g%d (%s):\n", grp.id, grp.signature.c_str());
      pipeline_.print_loop_nest();
    }
    pipeline_.compile_jit(host_target());
  }

  const std::vector<TensorDesc>& output_descs() const override { return outs_; }

  // Halide's Mullapudi2016 autoscheduler on this group, given the shapes as estimates.
  void autoschedule_mullapudi(const std::vector<TensorFunc>& outputs) {
    static const bool loaded = [] {
      const char* installed = "/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so";
      load_plugin(std::ifstream(installed).good() ? installed : "autoschedule_mullapudi2016");
      return true;
    }();
    (void)loaded;
    auto region = [](const Shape& s) {
      Region r;
      for (auto it = s.rbegin(); it != s.rend(); ++it) r.emplace_back(0, static_cast<int>(*it));
      return r;
    };
    for (size_t k = 0; k < params_.size(); ++k)
      if (params_[k].defined()) params_[k].set_estimates(region(input_shapes_[k]));
    for (const TensorFunc& t : outputs)
      if (shape_numel(t.shape) > 0) Func(t.func).set_estimates(region(t.shape));
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    pipeline_.auto_schedule("Mullapudi2016", host_target(), MachineParams(cores, 32 << 20, 40));
  }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) override {
    realize_into(pipeline_, params_, inputs, computed_, outputs, "fused kernel g" + std::to_string(id_));
  }

 private:
  int id_;
  // Group input k as a Func reading its ImageParam (created on first use).
  TensorFunc input(const Graph& g, const FusionGroup& grp, int k) {
    const Value& v = g.value(grp.inputs[k]);
    if (!params_[k].defined()) {
      input_shapes_.resize(params_.size());
      input_shapes_[k] = v.type.shape();
    }
    if (!params_[k].defined())
      params_[k] = ImageParam(halide_type(v.type.dtype), static_cast<int>(v.type.dims.size()),
                              "g" + std::to_string(grp.id) + "_in" + std::to_string(k));
    return TensorFunc{Func(params_[k]), v.type.dtype, v.type.shape()};
  }

  // The default algorithm: each member's builder on the group inputs and the Funcs of the members
  // before it. Returns the group outputs and fills `members` for the schedule.
  std::vector<TensorFunc> compose_members(const Graph& g, const FusionGroup& grp,
                                          std::vector<MemberFuncs>& members) {
    const OpRegistry& reg = OpRegistry::global();
    std::map<std::string, int> input_index;
    for (size_t k = 0; k < grp.inputs.size(); ++k) input_index[grp.inputs[k]] = static_cast<int>(k);
    std::map<std::string, TensorFunc> env;  // values available as Funcs inside the group
    std::map<std::string, FuncDecision> decision_of;
    for (const FuncDecision& d : grp.decisions) decision_of[d.value] = d;

    for (int idx : grp.nodes) {
      const Node& n = g.nodes()[idx];
      const OpSchema& schema = reg.get(n);
      auto descs = std::make_unique<std::vector<TensorDesc>>(n.inputs.size());
      std::vector<const TensorDesc*> types(n.inputs.size(), nullptr);
      std::vector<const Tensor*> values(n.inputs.size(), nullptr);
      std::vector<TensorFunc> ins(n.inputs.size());
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const std::string& in = n.inputs[i];
        if (in.empty()) continue;
        const Value& v = g.value(in);
        (*descs)[i] = TensorDesc{v.type.dtype, v.type.shape()};
        types[i] = &(*descs)[i];
        if (schema.is_value_input(static_cast<int>(i)) && v.constant) values[i] = &*v.constant;
        ins[i].dtype = v.type.dtype;
        ins[i].shape = v.type.shape();
        if (schema.is_shape_only_input(static_cast<int>(i))) continue;
        auto e = env.find(in);
        if (e != env.end()) {
          ins[i] = e->second;
          continue;
        }
        ins[i] = env[in] = input(g, grp, input_index.at(in));
      }
      infers_.push_back(std::make_unique<InferContext>(n, types, values));
      descs_.push_back(std::move(descs));
      std::vector<TensorDesc> outs = infer_node(schema, n, types, values);
      BuildContext b(*infers_.back(), ins, outs);
      schema.build(b);
      MemberFuncs m;
      m.stages = b.stages();
      m.tiled_matmul = schema.op_class == OpClass::MatMul &&
                       (n.op_type == "Gemm" || (types.size() == 2 && types[0]->shape.size() >= 2 &&
                                           types[1]->shape.size() >= 2));
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        m.outputs.push_back(b.outputs()[o]);
        auto d = decision_of.find(n.outputs[o]);
        m.decisions.push_back(d != decision_of.end() ? d->second : FuncDecision{});
        if (!n.outputs[o].empty()) env[n.outputs[o]] = b.outputs()[o];
      }
      members.push_back(std::move(m));
    }
    std::vector<TensorFunc> outputs;
    for (const std::string& o : grp.outputs) outputs.push_back(env.at(o));
    return outputs;
  }

  std::vector<std::unique_ptr<InferContext>> infers_;
  std::vector<std::unique_ptr<std::vector<TensorDesc>>> descs_;
  std::vector<TensorDesc> outs_;
  std::vector<ImageParam> params_;
  std::vector<Shape> input_shapes_;
  std::vector<int> computed_;
  Pipeline pipeline_;
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
