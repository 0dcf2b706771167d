#include "generators/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace gaf {

namespace {

int64_t aligned(int64_t n) {
  const int64_t a = MemoryPlan::kArenaAlignment;
  return (n + a - 1) / a * a;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, const FusionPlan& plan) {
  MemoryPlan mp;
  const int steps = static_cast<int>(plan.groups.size());
  std::set<std::string> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::map<std::string, size_t> slot_of;
  for (int s = 0; s < steps; ++s)
    for (const std::string& o : plan.groups[s].outputs) {
      if (o.empty() || slot_of.count(o)) continue;
      const Value& v = g.value(o);
      ArenaSlot slot;
      slot.value = o;
      // With dynamic dims the slot holds the value's largest shape over the ranges: the offsets
      // are fixed, every run's dims fit.
      Shape largest = v.type.shape();
      for (size_t d = 0; d < v.sym_dims.size(); ++d) largest[d] = max_over(v.sym_dims[d], g.dynamic);
      slot.bytes = byte_size(v.type.dtype, largest);
      slot.first = slot.last = s;
      if (graph_outputs.count(o)) slot.last = steps - 1;
      slot_of[o] = mp.slots.size();
      mp.slots.push_back(slot);
    }
  for (int s = 0; s < steps; ++s)
    for (const std::string& in : plan.groups[s].inputs) {
      auto it = slot_of.find(in);
      if (it != slot_of.end()) mp.slots[it->second].last = std::max(mp.slots[it->second].last, s);
    }

  std::vector<int64_t> live(steps, 0);
  for (const ArenaSlot& a : mp.slots)
    for (int s = a.first; s <= a.last; ++s) live[s] += aligned(a.bytes);
  for (int64_t b : live) mp.lower_bound = std::max(mp.lower_bound, b);

  std::vector<size_t> order(mp.slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return mp.slots[a].bytes > mp.slots[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    ArenaSlot& a = mp.slots[i];
    // Intervals [offset, offset + size) of placed values alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const ArenaSlot& b = mp.slots[j];
      if (b.first <= a.last && a.first <= b.last && b.bytes > 0)
        busy.emplace_back(b.offset, b.offset + aligned(b.bytes));
    }
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [lo, hi] : busy) {
      if (off + aligned(a.bytes) <= lo) break;
      off = std::max(off, hi);
    }
    a.offset = off;
    mp.arena_bytes = std::max(mp.arena_bytes, off + aligned(a.bytes));
    placed.push_back(i);
  }
  return mp;
}

}  // namespace gaf
