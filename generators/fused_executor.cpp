#include "generators/fused_executor.h"

#include "fusion/ops/registry.h"
#include "fusion/ops/symbolic_dims.h"
#include "generators/kernel_numbering.h"
#include "generators/memory_plan.h"
#include "generators/value_store.h"  // last_uses
#include "runtime/cache_window.h"
#include "runtime/memory_budget.h"
#include "schedules/host_target.h"

#include <algorithm>
#include <optional>
#include <chrono>
#include <set>

namespace gaf {

FusedExecutor::FusedExecutor(const Graph& g, const FusionPlan& plan, const ExecutorOptions& opts)
    : g_(g), plan_(plan), npu_(opts.npu != nullptr), comm_(opts.comm), kv_caches_(opts.kv_caches) {
  compile(opts);
}

void FusedExecutor::compile(const ExecutorOptions& opts) {
  const FusionPlan& plan = plan_;
  const Graph& g = g_;
  const ScheduleDb* schedules = opts.schedules;
  const NpuTarget* npu = opts.npu;
  auto t0 = std::chrono::steady_clock::now();
  const HostScheduleParams defaults = host_params_for(host_target());
  const std::string target = npu ? "npu-tile" : "host";
  const std::string machine = !schedules ? "" : npu ? npu_machine_key(*npu) : host_machine_key();
  for (const FusionGroup& grp : plan.groups) {
    input_checks_.emplace_back();
    for (int idx : grp.nodes) {
      const Node& n = g.nodes()[idx];
      const OpSchema* schema = OpRegistry::global().find(n.op_type);
      bool external = schema && schema->index_input;
      for (const std::string& in : n.inputs)
        external = external && (in.empty() || std::count(grp.inputs.begin(), grp.inputs.end(), in));
      if (external) input_checks_.back().push_back(idx);
    }
  }
  // With dynamic dims every group has one kernel per size class, compiled on the graph typed at
  // the class's schedule point.
  const KernelNumbering numbering = number_kernels(g, plan);
  classes_ = numbering.classes;
  dims_ = upper_bounds(g.dynamic);
  current_ = find_shape_class(classes_, dims_);
  kernels_.assign(classes_.size(), {});
  std::vector<std::shared_ptr<GroupKernel>> compiled(numbering.kernels.size());
  size_t done = 0;
  for (size_t c = 0; c < classes_.size(); ++c) {
    const std::optional<Graph> typed = class_graph(g, classes_[c]);
    const Graph& gc = typed ? *typed : g;
    for (size_t s = 0; s < plan.groups.size(); ++s) {
      const FusionGroup& grp = plan.groups[s];
      const TunedSchedule* tuned = schedules ? schedules->find(grp.signature, target, machine) : nullptr;
      if (c == 0) {
        tuned_.push_back(tuned != nullptr);
        stats_.tuned_groups += tuned != nullptr;
      }
      std::shared_ptr<GroupKernel>& k = compiled[numbering.kernel_of(c, s)];
      if (!numbering.first_use(c, s)) {
        ++stats_.kernel_cache_hits;
      } else {
        k = compile_group_kernel(gc, grp,
                                 {tuned && !npu ? with_tuned(defaults, *tuned) : defaults,
                                  npu ? ScheduleSource::NpuTile : ScheduleSource::Host, npu,
                                  tuned && npu ? tuned->npu : NpuScheduleParams{}, opts.comm});
        ++stats_.kernels_compiled;
        if (!k->schedule_fallback().empty())
          stats_.schedule_fallbacks.push_back("g" + std::to_string(grp.id) + " (" + classes_[c].str() +
                                              "): " + k->schedule_fallback());
      }
      kernels_[c].push_back(k);
      if (opts.progress) opts.progress(++done, grp);
    }
  }
  stats_.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The arena of run()'s intermediates. Allocating them per run cost the first runs after
  // compiling dearly (glibc maps and unmaps large blocks until its thresholds adapt: BERT-base
  // seq 128, the second run 82 ms against 67 ms from the third on).
  const MemoryPlan memory = plan_memory(g_, plan_);
  graph_outputs_.insert(g_.outputs().begin(), g_.outputs().end());
  for (const ArenaSlot& slot : memory.slots)
    if (!graph_outputs_.count(slot.value)) arena_offset_[slot.value] = slot.offset;
  for (const FusionGroup& grp : plan_.groups)
    for (const std::string& o : grp.outputs)
      if (graph_outputs_.count(o)) computed_outputs_.insert(o);
  number_slots();
  if (memory.arena_bytes > 0) {
    static_assert(MemoryPlan::kArenaAlignment <= 64, "tensor storage is 64-byte aligned");
    arena_ = allocate_tensor_storage(memory.arena_bytes, g_.name + ": the arena of " +
                                                             std::to_string(memory.slots.size()) + " intermediates");
  }
}

std::vector<Tensor> FusedExecutor::output_tensors(size_t s, TensorMap* caller) {
  const FusionGroup& grp = plan_.groups[s];
  std::vector<TensorDesc> descs = kernels_[current_].at(s)->output_descs();
  std::vector<Tensor> outs;
  for (size_t k = 0; k < descs.size(); ++k) {
    const std::string* name = k < grp.outputs.size() ? &grp.outputs[k] : nullptr;
    auto window = caller && name ? cache_windows_.find(*name) : cache_windows_.end();
    if (window != cache_windows_.end()) {
      outs.push_back(window->second.written);
      continue;
    }
    if (name && !g_.value(*name).sym_dims.empty()) descs[k].shape = eval_shape(g_.value(*name).sym_dims, dims_);
    auto at = caller && name ? arena_offset_.find(*name) : arena_offset_.end();
    if (at != arena_offset_.end() && arena_) {
      outs.push_back(Tensor::in_storage(descs[k].dtype, descs[k].shape,
                                        std::shared_ptr<uint8_t>(arena_, arena_.get() + at->second)));
      continue;
    }
    if (caller && name && graph_outputs_.count(*name)) {
      Tensor& t = (*caller)[*name];
      if (t.dtype() != descs[k].dtype || t.shape() != descs[k].shape || !t.raw())
        t = Tensor::uninitialized(descs[k].dtype, descs[k].shape);
      outs.push_back(t);  // shares the caller's storage
      continue;
    }
    try {
      outs.push_back(Tensor::uninitialized(descs[k].dtype, descs[k].shape));
    } catch (const GafError& e) {
      throw GafError("group " + std::to_string(s) + " output '" + (name ? *name : std::string("?")) + "': " + e.what());
    }
  }
  return outs;
}

void FusedExecutor::number_slots() {
  auto slot = [&](const std::string& name) {
    if (name.empty()) return -1;
    auto [it, fresh] = slots_.of.emplace(name, static_cast<int>(slots_.constant.size()));
    if (fresh) {
      const Value& v = g_.value(name);
      slots_.constant.push_back(v.constant ? &*v.constant : nullptr);
      slots_.keep.push_back(graph_outputs_.count(name) || std::count(g_.inputs().begin(), g_.inputs().end(), name));
    }
    return it->second;
  };
  for (const std::string& name : g_.inputs()) slot(name);
  for (const std::string& name : g_.outputs()) slot(name);
  std::vector<std::vector<std::string>> reads;
  for (const FusionGroup& grp : plan_.groups) {
    reads.push_back(grp.inputs);
    slots_.in.emplace_back();
    slots_.out.emplace_back();
    for (const std::string& v : grp.inputs) slots_.in.back().push_back(slot(v));
    for (const std::string& v : grp.outputs) slots_.out.back().push_back(slot(v));
  }
  const LastUse last = last_uses(reads);
  slots_.release.assign(plan_.groups.size(), {});
  for (const auto& [name, s] : last) slots_.release[s].push_back(slots_.of.at(name));
  for (size_t s = 0; s < plan_.groups.size(); ++s)
    for (const std::string& v : plan_.groups[s].outputs)
      if (!v.empty() && !last.count(v)) slots_.release[s].push_back(slots_.of.at(v));  // e.g. Dropout's unused mask
  env_.assign(slots_.constant.size(), Tensor());
  live_.assign(slots_.constant.size(), false);
}

TensorMap FusedExecutor::run(const TensorMap& inputs) {
  TensorMap outputs;
  run(inputs, outputs);
  return outputs;
}

void FusedExecutor::run(const TensorMap& inputs, TensorMap& outputs) {
  const std::map<std::string, int64_t> bound = check_graph_inputs(g_, inputs);
  // With dynamic dims: the class of the run's dims. Constants whose contents depend on the dims
  // (Value::sym_contents) are value or shape-only inputs, compiled into the kernels as
  // expressions: no kernel reads their tensors, so they are not evaluated here.
  if (!g_.dynamic.empty()) {
    for (auto& [name, value] : dims_) value = bound.at(name);
    current_ = find_shape_class(classes_, dims_);
  }
  // A past not in its block yet is copied there, and kernels read that copy (block strides).
  std::optional<TensorMap> moved_pasts = bind_cache_windows(inputs, outputs);
  for (const auto& [name, t] : moved_pasts ? *moved_pasts : inputs) {
    const int k = slots_.of.at(name);  // check_graph_inputs: every one is a graph input
    env_[k] = t;
    live_[k] = true;
  }
  auto get = [&](int k, const std::string& name) -> const Tensor* {
    if (live_[k]) return &env_[k];  // a graph input given for a value with a default (an initializer)
    if (slots_.constant[k]) return slots_.constant[k];
    throw GafError("value '" + name + "' is used before it is computed");
  };
  // Drops every value of the run, also on an error: the next run starts empty.
  struct Clear {
    FusedExecutor& e;
    ~Clear() {
      for (size_t k = 0; k < e.env_.size(); ++k)
        if (e.live_[k]) e.env_[k] = Tensor(), e.live_[k] = false;
    }
  } clear{*this};
  size_t live_bytes = 0, peak = 0;
  group_ms_.assign(plan_.groups.size(), 0.0);
  if (npu_) npu_counts_.assign(plan_.groups.size(), NpuCounts());
  std::vector<const Tensor*> ins;
  for (size_t s = 0; s < plan_.groups.size(); ++s) {
    const FusionGroup& grp = plan_.groups[s];
    ins.clear();
    for (size_t k = 0; k < grp.inputs.size(); ++k)
      ins.push_back(slots_.in[s][k] < 0 ? nullptr : get(slots_.in[s][k], grp.inputs[k]));
    check_member_inputs(s, ins);
    // Profiling a tensor-parallel run: the ranks meet before each group, so that a group's time
    // is its own and not the wait for a rank still busy with the group before (load imbalance
    // is the forward time's, not a group's). Every rank profiles the same plan: same collectives.
    if (profile_ && comm_ && comm_->size() > 1) comm_->barrier("profiling: start of group " + std::to_string(s));
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outs = run_kernel(s, ins, output_tensors(s, &outputs));
    if (profile_)
      group_ms_[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t k = 0; k < grp.outputs.size() && !cache_windows_.empty(); ++k) {
      auto window = cache_windows_.find(grp.outputs[k]);
      if (window != cache_windows_.end()) outs[k] = window->second.whole;  // later groups read all rows
    }
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      const int slot = slots_.out[s][k];
      if (slot < 0) continue;
      live_bytes += outs[k].nbytes();
      env_[slot] = std::move(outs[k]);
      live_[slot] = true;
    }
    peak = std::max(peak, live_bytes);
    for (int k : slots_.release[s])
      if (live_[k] && !slots_.keep[k]) {
        live_bytes -= env_[k].nbytes();
        env_[k] = Tensor();
        live_[k] = false;
      }
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, peak);
  // Graph outputs no group computes (a graph input or a constant passed through) are shared.
  for (const std::string& o : g_.outputs())
    if (!computed_outputs_.count(o)) outputs[o] = *get(slots_.of.at(o), o);
}

std::optional<TensorMap> FusedExecutor::bind_cache_windows(const TensorMap& inputs, TensorMap& outputs) {
  cache_windows_.clear();
  std::optional<TensorMap> moved;
  for (const auto& [name, b] : kv_caches_) {
    const Value& v = g_.value(name);
    const Shape shape = v.sym_dims.empty() ? v.type.shape() : eval_shape(v.sym_dims, dims_);
    auto kept = outputs.find(name);
    CacheWindow w = bind_cache_window(name, v.type.dtype, shape, b.axis, b.capacity, b.append,
                                      b.past.empty() ? nullptr : &inputs.at(b.past),
                                      kept == outputs.end() ? nullptr : &kept->second);
    if (w.moved_past) {
      if (!moved) moved = inputs;
      (*moved)[b.past] = *w.moved_past;
    }
    outputs[name] = w.whole;
    cache_windows_[name] = CacheWindows{w.whole, w.written};
  }
  return moved;
}

void FusedExecutor::check_member_inputs(size_t s, const std::vector<const Tensor*>& group_inputs) const {
  const FusionGroup& grp = plan_.groups[s];
  for (int idx : input_checks_[s]) {
    const Node& n = g_.nodes()[idx];
    std::vector<const Tensor*> ins;
    for (const std::string& in : n.inputs) {
      auto at = std::find(grp.inputs.begin(), grp.inputs.end(), in);
      ins.push_back(in.empty() ? nullptr : group_inputs[static_cast<size_t>(at - grp.inputs.begin())]);
    }
    check_node_inputs(OpRegistry::global().get(n), n, ins);
  }
}

std::vector<Tensor> FusedExecutor::run_group(size_t s, const std::vector<const Tensor*>& inputs) {
  check_member_inputs(s, inputs);
  return run_kernel(s, inputs, output_tensors(s, nullptr));  // the caller keeps them: not the arena
}

std::vector<Tensor> FusedExecutor::run_kernel(size_t s, const std::vector<const Tensor*>& inputs,
                                              std::vector<Tensor> outs) {
  GroupKernel& k = *kernels_[current_].at(s);
  if (const NpuStageMap* stages = k.npu_stages()) {
    if (npu_counts_.size() != plan_.groups.size()) npu_counts_.assign(plan_.groups.size(), NpuCounts());
    NpuSimulator::Session session(*stages, npu_counts_[s]);
    k.run(inputs, outs, dims_);
    return outs;
  }
  k.run(inputs, outs, dims_);
  return outs;
}

}  // namespace gaf
