#include "generators/kv_cache.h"

#include <algorithm>

namespace gaf {

namespace {

template <typename T>
bool lists(const std::vector<T>& items, const T& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

bool has_zero_extent(const SymShape& dims) {
  for (const SymExpr& d : dims)
    if (d.is_constant() && d.constant_term() == 0) return true;
  return false;
}

// present = Concat(past, rows) on the cache axis, and the group computing it reads present in
// none of its members (a member that did would need the rows before past's computed too).
bool appends(const Graph& g, const FusionPlan& plan, const KvCacheBinding& b) {
  const Value& present = g.value(b.present);
  if (b.past.empty() || present.producer < 0) return false;
  const Node& concat = g.nodes()[present.producer];
  if (concat.op_type != "Concat" || concat.inputs.size() < 2 || concat.inputs[0] != b.past) return false;
  int64_t axis = concat.attrs.get_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(present.type.dims.size());
  if (axis != b.axis) return false;
  for (const FusionGroup& grp : plan.groups) {
    if (!lists(grp.nodes, present.producer)) continue;
    for (int idx : grp.nodes)
      if (lists(g.nodes()[idx].inputs, b.present)) return false;
  }
  return true;
}

}  // namespace

std::map<std::string, KvCacheBinding> bind_kv_caches(Graph& g, const FusionPlan& plan,
                                                     const std::vector<KvCacheBinding>& bindings) {
  std::map<std::string, KvCacheBinding> bound;
  for (KvCacheBinding b : bindings) {
    const std::string what = "KV cache '" + b.present + "'";
    if (!lists(g.outputs(), b.present)) throw GafError(what + ": not an output of the model");
    Value& present = g.value(b.present);
    const int rank = static_cast<int>(present.type.dims.size());
    if (b.axis < 0 || b.axis >= rank)
      throw GafError(what + ": axis " + std::to_string(b.axis) + " is outside its " + std::to_string(rank) + " dims");
    if (b.capacity < present.type.dims[b.axis].value && present.sym_dims.empty())
      throw GafError(what + ": " + std::to_string(b.capacity) + " rows cannot hold its " +
                     std::to_string(present.type.dims[b.axis].value));
    if (!b.past.empty()) {
      if (!lists(g.inputs(), b.past)) throw GafError(what + ": '" + b.past + "' is not an input of the model");
      Value& past = g.value(b.past);
      if (past.type.dtype != present.type.dtype || static_cast<int>(past.type.dims.size()) != rank)
        throw GafError(what + ": past '" + b.past + "' is " + past.type.str() + ", present is " + present.type.str());
      past.block_window = {b.axis, b.capacity};
    }
    if (bound.count(b.present)) throw GafError(what + ": bound twice");
    present.block_window = {b.axis, b.capacity};
    b.append = appends(g, plan, b);
    present.block_window.append = b.append;
    bound[b.present] = b;
  }
  return bound;
}

std::vector<KvCacheBinding> decoder_kv_caches(const Graph& g, int64_t capacity) {
  const std::string present_prefix = "present.", past_prefix = "past_key_values.";
  std::vector<KvCacheBinding> caches;
  for (const std::string& out : g.outputs()) {
    if (out.rfind(present_prefix, 0) != 0) continue;
    std::string past = past_prefix + out.substr(present_prefix.size());
    if (std::find(g.inputs().begin(), g.inputs().end(), past) == g.inputs().end()) past.clear();
    // A past bound to length 0 (the prefill of a single-file or merged decoder): nothing to continue.
    else if (has_zero_extent(g.value(past).sym_shape()))
      past.clear();
    const std::string& along = past.empty() ? out : past;
    const SymShape& dims = g.value(along).sym_dims;
    int axis = -1;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!dims[d].is_constant()) {
        if (axis >= 0) throw GafError("KV cache '" + out + "': '" + along + "' has more than one dynamic dim");
        axis = static_cast<int>(d);
      }
    if (axis < 0)
      throw GafError("KV cache '" + out + "': '" + along +
                     "' has no dynamic dim to hold the cache length (give it a range with --dim)");
    caches.push_back(KvCacheBinding{out, past, axis, capacity});
  }
  if (caches.empty()) throw GafError("the model has no 'present.*' outputs to keep as KV caches");
  return caches;
}

}  // namespace gaf
