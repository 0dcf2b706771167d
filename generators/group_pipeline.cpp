#include "generators/group_pipeline.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "generators/weight_packing.h"
#include "generators/custom_algorithm.h"
#include "schedules/reference_schedule.h"

namespace gaf {

using namespace Halide;

GroupPipeline::GroupPipeline(const Graph& g, const FusionGroup& grp, const KernelOptions& opts, const Target& target)
    : id_(grp.id), npu_source_(opts.source == ScheduleSource::NpuTile) {
  for (const auto& [name, range] : g.dynamic) {
    symbols_.emplace_back("dim_" + name);
    // Known bounds let Halide's simplifier divide by the dim: a head's rows [h*seq, h*seq+seq)
    // then give head h alone ((h*seq + seq - 1) / seq = h needs seq >= 1), not a loop over every
    // head when K^T is staged per head.
    symbols_.back().set_range(static_cast<int32_t>(range.lo), static_cast<int32_t>(range.hi));
    // A dim with one value in this kernel's size class is a constant: a static kernel.
    symbol_exprs_[name] = range.lo == range.hi ? Expr(static_cast<int32_t>(range.lo)) : Expr(symbols_.back());
  }
  params_.resize(grp.inputs.size());
  for (const std::string& in : grp.inputs) {
    const Value& v = g.value(in);
    in_descs_.push_back(TensorDesc{v.type.dtype, v.type.shape()});
    Value shape_only;
    shape_only.type = v.type;
    shape_only.sym_dims = v.sym_dims;
    shape_only.block_window = v.block_window;
    in_values_.push_back(shape_only);
  }
  std::vector<MemberFuncs> members;  // stays empty for a generate step: its Funcs are its own
  std::vector<TensorFunc> outputs;
  if (GenerateFn gen = find_custom_algorithm(grp)) {
    std::vector<TensorFunc> ins;
    for (size_t k = 0; k < grp.inputs.size(); ++k) ins.push_back(input(g, grp, static_cast<int>(k)));
    outputs = run_custom_algorithm(gen, ins, g, grp);
  } else {
    outputs = compose_members(g, grp, members);
  }

  for (size_t k = 0; k < outputs.size(); ++k) {
    const TensorFunc& t = outputs[k];
    outs_.push_back(TensorDesc{t.dtype, t.shape});
    if (shape_numel(t.shape) == 0) continue;  // zero-sized outputs are not computed
    computed_.push_back(static_cast<int>(k));
    out_funcs_.push_back(t.func);
  }
  if (out_funcs_.empty()) return;
  if (opts.source == ScheduleSource::NpuTile) {
    if (!opts.npu) throw GafError("group g" + std::to_string(grp.id) + ": the NPU tile schedule needs a target");
    std::vector<TensorFunc> computed;
    for (int k : computed_) computed.push_back(outputs[k]);
    std::vector<NpuGroupInput> ins;
    for (size_t k = 0; k < params_.size(); ++k) ins.push_back(NpuGroupInput{params_[k], in_descs_[k].shape});
    npu_ = apply_npu_schedule("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) + ")", computed,
                              members, ins, *opts.npu, opts.npu_params);
    out_funcs_ = npu_->gm_outputs;  // the GM copies of the outputs' UB tiles
  } else if (opts.source == ScheduleSource::Host) {
    const TensorFunc* anchor = outputs.size() == 1 ? &outputs[0] : nullptr;
    apply_fused_schedule(outputs, anchor, members, opts.params);
  } else if (opts.source == ScheduleSource::Reference) {
    std::vector<Stage> stages;
    for (const MemberFuncs& m : members) stages.insert(stages.end(), m.stages.begin(), m.stages.end());
    std::vector<TensorFunc> computed;
    for (int k : computed_) computed.push_back(outputs[k]);
    apply_reference_schedule(computed, stages);
  }
  for (size_t j = 0; j < out_funcs_.size(); ++j) {
    Func f = out_funcs_[j];
    constrain_dense(f.output_buffer(), g.value(grp.outputs[computed_[j]]), true);
  }
  pipeline_ = Pipeline(out_funcs_);
  if (opts.source == ScheduleSource::Mullapudi2016) autoschedule_mullapudi(outputs, target);
  if (std::getenv("GAF_PRINT_LOOP_NEST")) {  // schedule debugging: the loop nest Halide lowers
    std::fprintf(stderr, "loop nest of group g%d (%s):\n", grp.id, grp.signature.c_str());
    pipeline_.print_loop_nest();
  }
  if (const char* dir = std::getenv("GAF_ASM_DIR")) {  // schedule debugging: the code LLVM emits, DIR/g<id>.s
    pipeline_.compile_to_assembly(std::string(dir) + "/g" + std::to_string(grp.id) + ".s",
                                  pipeline_.infer_arguments(), "g" + std::to_string(grp.id),
                                  target.without_feature(Halide::Target::JIT));
  }
}

// Every caller (JIT kernels: halide_buffers.h, the AOT plan runtime: plan_runner.cpp) passes
// dense row-major buffers with mins 0 and the planned shape; saying so lets Halide fold the
// strides into constants: tile coordinates simplify (a packed B's panel index,
// matmul_schedule.h) and loads through layout ops are known to be dense or a fixed stride apart
// (a staged K^T becomes vector loads and shuffles instead of one scalar load per lane).
// A window of a block (Value::block_window, a KV cache) is row-major over the block, whose
// capacity is known: its strides are constants too. Only an appended output window's rows along
// the block axis are the buffer's (a step writes the rows after the past's); left free, the QKV
// group writing K and V ran 2.5x slower with every stride free as well.
void GroupPipeline::constrain_dense(Halide::OutputImageParam buf, const Value& v, bool output) const {
  const Shape shape = v.type.shape();
  if (shape_numel(shape) == 0) return;  // a zero-sized tensor: strides are meaningless
  const int rank = static_cast<int>(shape.size());
  std::vector<Expr> extents = extents_of(v);
  if (extents.empty())
    for (int64_t e : shape) extents.push_back(static_cast<int>(e));
  const int block_axis = v.block_window.defined() ? rank - 1 - v.block_window.axis : -1;  // Halide's order
  Expr stride = 1;
  for (int d = 0; d < rank; ++d) {
    const Expr& extent = extents[rank - 1 - d];
    if (d == block_axis) {
      // An appended present's rows are the buffer's (it writes the rows after the past's); any
      // other window spans the value's rows from 0 — left free, a schedule's tiles chosen at the
      // size class's point shifted before row 0 at smaller sizes (a 512-row prefill failed).
      if (!output || !v.block_window.append) buf.dim(d).set_bounds(0, extent);
      buf.dim(d).set_stride(stride);
      stride = Internal::simplify(stride * static_cast<int>(v.block_window.capacity));
      continue;
    }
    buf.dim(d).set_bounds(0, extent).set_stride(stride);
    stride = Internal::simplify(stride * extent);
  }
}

std::vector<Expr> GroupPipeline::exprs_of(const std::vector<SymExpr>& es) const {
  std::vector<Expr> out;
  for (const SymExpr& e : es) {
    Expr sum = 0;
    for (const auto& [monomial, coefficient] : e.terms()) {
      Expr term = static_cast<int32_t>(coefficient);
      for (const std::string& s : monomial) {
        auto it = symbol_exprs_.find(s);
        if (it == symbol_exprs_.end()) throw GafError("internal: symbolic dim '" + s + "' is not a dynamic dim");
        term = term * it->second;
      }
      sum = sum + term;
    }
    out.push_back(Internal::simplify(sum));
  }
  return out;
}

std::vector<Expr> GroupPipeline::extents_of(const Value& v) const {
  return v.sym_dims.empty() ? std::vector<Expr>{} : exprs_of(v.sym_dims);
}

// "g<id>_in<k>". NPU pipelines add a process-wide serial number: Halide does not trace the loads
// of an ImageParam whose name an earlier pipeline's traced ImageParam already used.
std::string GroupPipeline::param_name(size_t k) const {
  static std::atomic<int> serial{0};
  std::string name = "g" + std::to_string(id_) + "_in" + std::to_string(k);
  return npu_source_ ? name + "_npu" + std::to_string(serial++) : name;
}

std::vector<Argument> GroupPipeline::arguments() {
  std::vector<Argument> args;
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].defined()) {
      params_[k] =
          ImageParam(halide_type(in_descs_[k].dtype), static_cast<int>(in_descs_[k].shape.size()), param_name(k));
      constrain_dense(params_[k], in_values_[k], false);
    }
    args.push_back(params_[k]);
  }
  for (const Param<int32_t>& s : symbols_) args.push_back(s);
  return args;
}

// Halide's Mullapudi2016 autoscheduler on this group, given the shapes as estimates.
void GroupPipeline::autoschedule_mullapudi(const std::vector<TensorFunc>& outputs, const Target& target) {
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
    if (params_[k].defined()) params_[k].set_estimates(region(in_descs_[k].shape));
  for (const TensorFunc& t : outputs)
    if (shape_numel(t.shape) > 0) Func(t.func).set_estimates(region(t.shape));
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pipeline_.auto_schedule("Mullapudi2016", target, MachineParams(cores, 32 << 20, 40));
}

// Group input k as a Func reading its ImageParam (created on first use).
TensorFunc GroupPipeline::input(const Graph& g, const FusionGroup& grp, int k) {
  const Value& v = g.value(grp.inputs[k]);
  if (!params_[k].defined()) {
    params_[k] = ImageParam(halide_type(v.type.dtype), static_cast<int>(v.type.dims.size()), param_name(k));
    constrain_dense(params_[k], v, false);
  }
  TensorFunc t{Func(params_[k]), v.type.dtype, v.type.shape()};
  t.extents = extents_of(v);
  return t;
}

// The default algorithm: each member's builder on the group inputs and the Funcs of the members
// before it. Returns the group outputs and fills `members` for the schedule.
std::vector<TensorFunc> GroupPipeline::compose_members(const Graph& g, const FusionGroup& grp,
                                                       std::vector<MemberFuncs>& members) {
  const OpRegistry& reg = OpRegistry::global();
  std::map<std::string, int> input_index;
  for (size_t k = 0; k < grp.inputs.size(); ++k) input_index[grp.inputs[k]] = static_cast<int>(k);
  std::map<std::string, TensorFunc> env;  // values available as Funcs inside the group
  std::map<std::string, FuncDecision> decision_of;
  for (const FuncDecision& d : grp.decisions) decision_of[d.value] = d;
  if (grp.kernel.members.size() != grp.nodes.size())
    throw GafError("internal: group g" + std::to_string(grp.id) + " has no kernel spec (describe_group)");
  for (size_t pos = 0; pos < grp.nodes.size(); ++pos) {
    const int idx = grp.nodes[pos];
    const Node& n = g.nodes()[idx];
    const OpSchema& schema = reg.get(n);
    auto descs = std::make_unique<std::vector<TensorDesc>>(n.inputs.size());
    std::vector<const TensorDesc*> types(n.inputs.size(), nullptr);
    std::vector<const Tensor*> values(n.inputs.size(), nullptr);
    std::vector<TensorFunc> ins(n.inputs.size());
    std::vector<std::vector<Expr>> value_exprs, out_extents;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty()) continue;
      const Value& v = g.value(in);
      (*descs)[i] = TensorDesc{v.type.dtype, v.type.shape()};
      types[i] = &(*descs)[i];
      if (schema.is_value_input(static_cast<int>(i)) && v.constant) values[i] = &*v.constant;
      ins[i].dtype = v.type.dtype;
      ins[i].shape = v.type.shape();
      ins[i].extents = extents_of(v);
      if (!v.sym_contents.empty() && schema.is_value_input(static_cast<int>(i))) {
        value_exprs.resize(n.inputs.size());
        value_exprs[i] = exprs_of(v.sym_contents);
      }
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
    for (const std::string& o : n.outputs)
      out_extents.push_back(o.empty() ? std::vector<Expr>{} : extents_of(g.value(o)));
    BuildContext b(*infers_.back(), ins, outs, out_extents, value_exprs);
    schema.build(b);
    MemberFuncs m;
    static_cast<MemberSpec&>(m) = grp.kernel.members.at(pos);
    m.stages = b.stages();
    if (m.tiled_matmul) m.b_panel = static_cast<int>(packed_panel_width(n));
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

std::unique_ptr<GroupPipeline> lower_group_pipeline(const Graph& g, const FusionGroup& grp, const KernelOptions& opts,
                                                    const Target& target,
                                                    const std::function<void(GroupPipeline&)>& lower,
                                                    std::string& fallback) {
  auto named = [&](const std::string& what) {
    return GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                    "): Halide compile error: " + what);
  };
  fallback.clear();
  try {
    auto p = std::make_unique<GroupPipeline>(g, grp, opts, target);
    if (p->has_pipeline()) lower(*p);
    return p;
  } catch (const CompileError& e) {
    if (g.dynamic.empty() || opts.source != ScheduleSource::Host) throw named(e.what());
    fallback = e.what();
    const size_t cut = fallback.find('\n');  // Halide's first line says what; the rest is the loop
    if (cut != std::string::npos) fallback.resize(cut);
  }
  KernelOptions reference = opts;
  reference.source = ScheduleSource::Reference;
  try {
    auto p = std::make_unique<GroupPipeline>(g, grp, reference, target);
    if (p->has_pipeline()) lower(*p);
    return p;
  } catch (const CompileError& e) {
    throw named(e.what());
  }
}

}  // namespace gaf
