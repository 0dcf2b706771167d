#include "generators/fused_executor.h"

#include <chrono>
#include <set>

namespace gaf {

FusedExecutor::FusedExecutor(const Graph& g, const FusionPlan& plan) : g_(g), plan_(plan) {
  auto t0 = std::chrono::steady_clock::now();
  for (const FusionGroup& grp : plan.groups) {
    auto it = by_signature_.find(grp.signature);
    if (it != by_signature_.end()) {
      ++stats_.kernel_cache_hits;
      kernels_.push_back(it->second);
      continue;
    }
    std::shared_ptr<GroupKernel> k = compile_group_kernel(g, grp);
    ++stats_.kernels_compiled;
    by_signature_[grp.signature] = k;
    kernels_.push_back(k);
  }
  stats_.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TensorMap FusedExecutor::run(const TensorMap& inputs) {
  check_graph_inputs(g_, inputs);
  std::map<std::string, size_t> last_use;
  for (size_t s = 0; s < plan_.groups.size(); ++s)
    for (const std::string& in : plan_.groups[s].inputs) last_use[in] = s;
  std::set<std::string> keep(g_.outputs().begin(), g_.outputs().end());
  TensorMap env(inputs.begin(), inputs.end());
  size_t live = 0, peak = 0;
  auto lookup = [&](const std::string& name) -> const Tensor* {
    auto it = env.find(name);
    if (it != env.end()) return &it->second;
    const Value& v = g_.value(name);
    if (v.constant) return &*v.constant;
    throw GafError("internal: value '" + name + "' is used before it is computed");
  };
  group_ms_.assign(plan_.groups.size(), 0.0);
  for (size_t s = 0; s < plan_.groups.size(); ++s) {
    const FusionGroup& grp = plan_.groups[s];
    GroupKernel& k = *kernels_[s];
    std::vector<const Tensor*> ins;
    for (const std::string& in : grp.inputs) ins.push_back(lookup(in));
    std::vector<Tensor> outs;
    for (const TensorDesc& d : k.output_descs()) outs.emplace_back(d.dtype, d.shape);
    auto t0 = std::chrono::steady_clock::now();
    k.run(ins, outs);
    if (profile_)
      group_ms_[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t o = 0; o < grp.outputs.size(); ++o) {
      live += outs[o].nbytes();
      env[grp.outputs[o]] = std::move(outs[o]);
    }
    peak = std::max(peak, live);
    for (const std::string& in : grp.inputs) {
      if (keep.count(in) || inputs.count(in) || last_use[in] != s) continue;
      auto it = env.find(in);
      if (it != env.end()) {
        live -= it->second.nbytes();
        env.erase(it);
      }
    }
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, peak);
  TensorMap result;
  for (const std::string& o : g_.outputs()) result[o] = *lookup(o);
  return result;
}

}  // namespace gaf
