#include "generators/executable.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "fusion/ops/registry.h"
#include "fusion/ops/symbolic_dims.h"
#include "fusion/report/report.h"
#include "generators/aot_compiler.h"  // check_library_name
#include "generators/shape_classes.h"
#include "schedules/host_target.h"

namespace gaf {

namespace {

// With dynamic dims: the dims' expressions, and the shape the largest over their ranges.
AotTensor aot_tensor(const Graph& g, const std::string& v) {
  const Value& val = g.value(v);
  AotTensor t{v, val.type.dtype, val.type.shape(), val.sym_dims};
  for (size_t d = 0; d < val.sym_dims.size(); ++d) t.shape[d] = max_over(val.sym_dims[d], g.dynamic);
  return t;
}

// The members of `grp` with an index input (OpSchema::index_input) whose indices and data both
// come from outside the group: the runner checks them before the kernel (which clamps).
std::vector<AotIndexCheck> index_checks(const Graph& g, const FusionGroup& grp) {
  std::vector<AotIndexCheck> checks;
  auto external = [&](const std::string& v) { return std::count(grp.inputs.begin(), grp.inputs.end(), v) > 0; };
  for (int idx : grp.nodes) {
    const Node& n = g.nodes()[idx];
    const OpSchema* schema = OpRegistry::global().find(n.op_type);
    if (!schema || !schema->index_input) continue;
    const OpSchema::IndexInput& ii = *schema->index_input;
    if (static_cast<size_t>(std::max(ii.indices, ii.data)) >= n.inputs.size()) continue;
    const std::string &indices = n.inputs[ii.indices], &data = n.inputs[ii.data];
    if (!external(indices) || !external(data)) continue;
    const int axis = index_axis(ii, n, static_cast<int>(g.value(data).type.shape().size()));
    if (axis >= 0) checks.push_back(AotIndexCheck{n.name, n.op_type, indices, data, axis});
  }
  return checks;
}

}  // namespace

std::vector<std::vector<std::string>> kernel_function_names(const KernelNumbering& n, const FusionPlan& plan,
                                                            const std::string& name) {
  std::vector<std::vector<std::string>> fns(plan.groups.size());
  for (size_t c = 0; c < n.classes.size(); ++c)
    for (size_t s = 0; s < plan.groups.size(); ++s) fns[s].push_back(name + "_k" + std::to_string(n.kernel_of(c, s)));
  return fns;
}

std::vector<AotWeight> weight_entries(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, int64_t& total) {
  std::set<std::string> skip(g.inputs().begin(), g.inputs().end());
  for (const ArenaSlot& s : mp.slots) skip.insert(s.value);
  std::vector<AotWeight> weights;
  int64_t off = 0;
  auto note = [&](const std::string& v) {
    if (!g.value(v).constant || !skip.insert(v).second) return;
    const Tensor& t = *g.value(v).constant;
    AotWeight e;
    e.name = v;
    e.dtype = t.dtype();
    e.shape = t.shape();
    e.offset = (off + 63) / 64 * 64;
    e.bytes = static_cast<int64_t>(t.nbytes());
    off = e.offset + e.bytes;
    weights.push_back(e);
  };
  for (const FusionGroup& grp : plan.groups)
    for (const std::string& in : grp.inputs) note(in);
  for (const std::string& o : g.outputs()) note(o);
  total = off;
  return weights;
}

AotKernel aot_kernel_entry(const std::string& fn, const FusionGroup& grp, bool tuned, const NpuStageMap* npu_stages,
                           const std::vector<std::string>& npu_tiles) {
  AotKernel k;
  k.function = fn;
  k.signature = grp.signature;
  k.tuned = tuned;
  k.first_group = grp.id;
  if (npu_stages) {
    k.has_npu = true;
    k.npu_stages = *npu_stages;
    k.npu_tiles = npu_tiles;
  }
  return k;
}

std::string schedule_fallback_line(const FusionGroup& grp, const ShapeClass& cls, const std::string& why) {
  return "g" + std::to_string(grp.id) + " (" + cls.str() + "): " + why;
}

// The plan file's content: the graph's inputs and outputs, the arena, the groups in order.
AotPlan make_aot_plan(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, const std::string& name,
                      const std::string& model, const NpuTarget* npu, const PlanKernels& ks) {
  AotPlan p;
  p.name = name;
  p.model = model;
  p.npu = npu != nullptr;
  if (npu) p.npu_target = *npu;
  p.library = name + ".a";
  p.header = name + ".h";
  p.weights_file = name + ".weights";
  for (const std::string& in : g.inputs()) p.inputs.push_back(aot_tensor(g, in));
  for (const std::string& o : g.outputs()) p.outputs.push_back(aot_tensor(g, o));
  for (const auto& [dim, range] : g.dynamic) p.dims.push_back(AotDim{dim, range});
  if (!g.dynamic.empty())
    for (const ShapeClass& c : ks.classes) p.classes.push_back(c.ranges);
  p.kernels = ks.kernels;
  p.arena_bytes = mp.arena_bytes;
  p.arena_lower_bound = mp.lower_bound;
  p.arena_alignment = MemoryPlan::kArenaAlignment;
  for (const ArenaSlot& s : mp.slots) {
    AotBuffer b;
    static_cast<AotTensor&>(b) = aot_tensor(g, s.value);
    b.offset = s.offset;
    b.bytes = s.bytes;
    b.first = s.first;
    b.last = s.last;
    p.buffers.push_back(b);
  }
  for (size_t s = 0; s < plan.groups.size(); ++s) {
    const FusionGroup& grp = plan.groups[s];
    AotGroup a;
    a.id = grp.id;
    a.kind = fusion_kind_name(grp.kind);
    a.label = grp.kernel.label;
    a.inputs = grp.inputs;
    a.outputs = grp.outputs;
    for (const std::string& o : grp.outputs)
      if (shape_numel(g.value(o).type.shape()) > 0) a.kernel_outputs.push_back(o);
    for (const std::string& fn : ks.fn_of_group[s]) a.class_kernels.push_back(a.kernel_outputs.empty() ? "" : fn);
    a.kernel = a.class_kernels.front();
    a.index_checks = index_checks(g, grp);
    p.groups.push_back(a);
  }
  return p;
}

namespace {

// The default backend: each kernel JIT-compiled for this machine (compile_group_kernel), called
// through run_argv.
class JitKernels : public KernelBackend {
 public:
  explicit JitKernels(const Graph& g) {
    for (const auto& [d, range] : g.dynamic) dim_names_.push_back(d);
  }
  HostScheduleParams default_params() const override { return host_params_for(host_target()); }
  BuiltKernel build(const KernelSite& site) override {
    std::shared_ptr<GroupKernel> k = compile_group_kernel(*site.g, *site.grp, site.options);
    BuiltKernel b;
    b.fallback = k->schedule_fallback();
    for (const TensorDesc& d : k->output_descs()) b.computes = b.computes || shape_numel(d.shape) > 0;
    if (k->npu_stages()) b.npu_stages = *k->npu_stages();
    b.npu_tiles = k->npu_tiles();
    b.call = [k, n_in = site.grp->inputs.size(), dims = dim_names_](void** args) {
      return k->run_argv(args, n_in, dims);
    };
    return b;
  }

 private:
  std::vector<std::string> dim_names_;  // the kernels' scalar arguments, in the plan's order
};

}  // namespace

Executable build_executable(const Graph& g, const FusionPlan& plan, const std::string& name,
                            const ExecutableOptions& opts) {
  check_library_name(name);
  const auto t0 = std::chrono::steady_clock::now();
  JitKernels jit(g);
  KernelBackend& backend = opts.backend ? *opts.backend : jit;
  const NpuTarget* npu = opts.npu;
  const HostScheduleParams defaults = backend.default_params();
  const std::string target = npu ? "npu-tile" : "host";
  const std::string machine = !opts.schedules ? "" : npu ? npu_machine_key(*npu) : host_machine_key();
  Executable out;
  out.numbering = number_kernels(g, plan);
  const KernelNumbering& numbering = out.numbering;
  PlanKernels ks;
  ks.classes = numbering.classes;
  ks.fn_of_group = kernel_function_names(numbering, plan, name);
  ks.kernels.resize(numbering.kernels.size());
  size_t done = 0;
  for (size_t c = 0; c < ks.classes.size(); ++c) {
    // With dynamic dims every group has one kernel per size class, compiled on the graph typed
    // at the class's schedule point.
    const std::optional<Graph> typed = class_graph(g, ks.classes[c]);
    const Graph& gc = typed ? *typed : g;
    for (size_t s = 0; s < plan.groups.size(); ++s) {
      const FusionGroup& grp = plan.groups[s];
      const TunedSchedule* tuned = opts.schedules ? opts.schedules->find(grp.signature, target, machine) : nullptr;
      if (c == 0) {
        out.tuned.push_back(tuned != nullptr);
        out.stats.tuned_groups += tuned != nullptr;
      }
      const size_t i = numbering.kernel_of(c, s);
      if (!numbering.first_use(c, s)) {
        ++out.stats.kernel_cache_hits;
        if (opts.progress) opts.progress(++done, grp);
        continue;
      }
      KernelSite site{ks.fn_of_group[s][c],
                      &ks.classes[c],
                      &gc,
                      &grp,
                      tuned,
                      KernelOptions{tuned && !npu ? with_tuned(defaults, *tuned) : defaults,
                                    npu ? ScheduleSource::NpuTile : ScheduleSource::Host, npu,
                                    tuned && npu ? tuned->npu : NpuScheduleParams{}, opts.comm}};
      BuiltKernel k = backend.build(site);
      ++out.stats.kernels_compiled;
      if (!k.fallback.empty())
        out.stats.schedule_fallbacks.push_back(schedule_fallback_line(grp, ks.classes[c], k.fallback));
      ks.kernels[i] = aot_kernel_entry(k.computes ? site.function : "", grp, tuned != nullptr,
                                       k.npu_stages ? &*k.npu_stages : nullptr, k.npu_tiles);
      if (k.computes && k.call) out.kernels[site.function] = std::move(k.call);
      if (opts.progress) opts.progress(++done, grp);
    }
  }
  const MemoryPlan mp = plan_memory(g, plan);
  out.plan = make_aot_plan(g, plan, mp, name, opts.model.empty() ? g.name : opts.model, npu, ks);
  out.plan.halide_target = host_target().to_string();
  out.plan.weights_file = "";  // the weights are the graph's constants
  out.plan.weights = weight_entries(g, plan, mp, out.plan.weights_bytes);
  for (const AotWeight& w : out.plan.weights) out.weights.emplace(w.name, *g.value(w.name).constant);
  for (const auto& [present, b] : opts.kv_caches)
    out.plan.kv_caches.push_back(AotKvCache{present, b.past, b.axis, b.capacity, b.append});
  out.plan.kernel_table_hash_recorded = out.plan.kernel_table_hash();
  if (!opts.backend) {
    out.runner = std::make_unique<PlanRunner>(out.plan, out.kernels, out.weights);
    // Profiling a tensor-parallel run: the ranks meet before each group, so that a group's time
    // is its own and not the wait for a rank still busy with the group before (load imbalance
    // is the forward time's, not a group's). Every rank profiles the same plan: same collectives.
    if (Communicator* comm = opts.comm; comm && comm->size() > 1)
      out.runner->set_group_hook([comm](size_t s) { comm->barrier("profiling: start of group " + std::to_string(s)); });
  }
  out.stats.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<std::string> Executable::npu_tiles(size_t s) const {
  return plan.kernels.at(numbering.kernel_of(0, s)).npu_tiles;
}

}  // namespace gaf
