// The tensors live during one run of a graph, shared by the reference and the fused executor:
// graph inputs and constants are looked up, step results stored, and each intermediate freed right
// after the last step that reads it (results nobody reads are dropped at once). Tracks peak bytes.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace gaf {

// The step that reads each value last, from reads[s] = the values step s reads. An executor that
// runs the same steps every time computes it once.
using LastUse = std::map<std::string, size_t>;
inline LastUse last_uses(const std::vector<std::vector<std::string>>& reads) {
  LastUse last;
  for (size_t s = 0; s < reads.size(); ++s)
    for (const std::string& v : reads[s])
      if (!v.empty()) last[v] = s;
  return last;
}

class ValueStore {
 public:
  // reads[s] = the values step s reads.
  ValueStore(const Graph& g, const std::map<std::string, Tensor>& inputs,
             const std::vector<std::vector<std::string>>& reads)
      : g_(g),
        env_(inputs),
        keep_(g.outputs().begin(), g.outputs().end()),
        owned_(last_uses(reads)),
        last_use_(owned_) {
    for (const auto& [name, _] : inputs) keep_.insert(name);
  }
  // `last_use` (last_uses of the steps) outlives the store.
  ValueStore(const Graph& g, const std::map<std::string, Tensor>& inputs, const LastUse& last_use)
      : g_(g), env_(inputs), keep_(g.outputs().begin(), g.outputs().end()), last_use_(last_use) {
    for (const auto& [name, _] : inputs) keep_.insert(name);
  }

  const Tensor* get(const std::string& name) const {
    auto it = env_.find(name);
    if (it != env_.end()) return &it->second;
    const Value& v = g_.value(name);
    if (v.constant) return &*v.constant;
    throw GafError("value '" + name + "' is used before it is computed");
  }

  // Stores the results of step s, then frees what step s read for the last time.
  void finish_step(size_t s, const std::vector<std::string>& names, std::vector<Tensor>& results,
                   const std::vector<std::string>& read) {
    for (size_t k = 0; k < names.size(); ++k) {
      if (names[k].empty()) continue;
      live_ += results[k].nbytes();
      env_[names[k]] = std::move(results[k]);
    }
    peak_ = std::max(peak_, live_);
    for (const std::string& v : read) {
      auto lu = last_use_.find(v);
      if (!v.empty() && lu != last_use_.end() && lu->second == s) release(v);
    }
    for (const std::string& v : names)
      if (!v.empty() && !last_use_.count(v)) release(v);  // e.g. Dropout's unused mask
  }

  size_t peak_bytes() const { return peak_; }

  std::map<std::string, Tensor> graph_outputs() const {
    std::map<std::string, Tensor> out;
    for (const std::string& o : g_.outputs()) out[o] = *get(o);
    return out;
  }

 private:
  void release(const std::string& v) {
    auto it = env_.find(v);
    if (keep_.count(v) || it == env_.end()) return;
    live_ -= it->second.nbytes();
    env_.erase(it);
  }

  const Graph& g_;
  std::map<std::string, Tensor> env_;
  std::set<std::string> keep_;  // graph inputs and outputs are never freed
  LastUse owned_;               // when built from reads
  const LastUse& last_use_;
  size_t live_ = 0, peak_ = 0;
};

}  // namespace gaf
