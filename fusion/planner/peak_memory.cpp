#include "fusion/planner/peak_memory.h"

#include <algorithm>
#include <queue>
#include <set>

#include "fusion/planner/group_info.h"

namespace gaf {

PeakMemoryModel::PeakMemoryModel(const GraphView& v) : v_(v) {
  std::set<std::pair<int, int>> edges;
  for (int n = 0; n < v.num_nodes(); ++n)
    for (const std::string& o : v.node(n).outputs) {
      if (o.empty()) continue;
      vals_.push_back(ValueUse{o, n, value_bytes(v.graph(), o), v.is_graph_output(o), v.consumers(o)});
      for (int c : v.consumers(o))
        if (c != n) edges.insert({n, c});
    }
  edges_.assign(edges.begin(), edges.end());
}

std::vector<int> PeakMemoryModel::execution_order(const std::vector<int>& group_of) const {
  int ids = 0;
  for (int gid : group_of) ids = std::max(ids, gid + 1);
  std::vector<int> first(ids, -1), indeg(ids, 0);
  for (int n = 0; n < v_.num_nodes(); ++n) {
    int& f = first[group_of[n]];
    if (f < 0 || v_.topo_position(n) < f) f = v_.topo_position(n);
  }
  std::set<std::pair<int, int>> group_edges;
  for (const auto& [p, c] : edges_)
    if (group_of[p] != group_of[c]) group_edges.insert({group_of[p], group_of[c]});
  std::vector<std::vector<int>> succ(ids);
  for (const auto& [a, b] : group_edges) {
    succ[a].push_back(b);
    ++indeg[b];
  }
  // Kahn; among the ready groups the one whose earliest node comes first.
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (int gid = 0; gid < ids; ++gid)
    if (first[gid] >= 0 && indeg[gid] == 0) ready.push({first[gid], gid});
  std::vector<int> order;
  while (!ready.empty()) {
    int gid = ready.top().second;
    ready.pop();
    order.push_back(gid);
    for (int s : succ[gid])
      if (--indeg[s] == 0) ready.push({first[s], s});
  }
  return order;
}

PeakMemoryModel::Peak PeakMemoryModel::peak(const std::vector<int>& group_of,
                                            const std::function<int64_t(int)>& internal_bytes, bool with_live) const {
  std::vector<int> order = execution_order(group_of);
  std::vector<int> step(group_of.empty() ? 0 : *std::max_element(group_of.begin(), group_of.end()) + 1, -1);
  for (size_t s = 0; s < order.size(); ++s) step[order[s]] = static_cast<int>(s);
  const size_t steps = order.size();
  std::vector<int64_t> stored(steps, 0), freed(steps, 0);
  // Per stored value: the step that stores it and the step after which it is freed (-1 never).
  std::vector<std::pair<int, int>> span(vals_.size(), {-1, -1});
  for (size_t i = 0; i < vals_.size(); ++i) {
    const ValueUse& val = vals_[i];
    int home = group_of[val.producer];
    int last = -1;
    for (int c : val.consumers)
      if (group_of[c] != home) last = std::max(last, step[group_of[c]]);
    if (last < 0 && !val.graph_output) continue;  // not stored: read only inside its group
    int at = step[home];
    stored[at] += val.bytes;
    // Graph outputs are kept; a value read by no other group is dropped right after its step.
    int free_after = val.graph_output ? -1 : std::max(last, at);
    if (free_after >= 0) freed[free_after] += val.bytes;
    span[i] = {at, free_after};
  }
  Peak best;
  int64_t live = 0;
  for (size_t s = 0; s < steps; ++s) {
    live += stored[s];
    int64_t internal = internal_bytes(order[s]);
    if (live + internal > best.bytes) {
      best.bytes = live + internal;
      best.group = order[s];
      best.internal = internal;
    }
    live -= freed[s];
  }
  if (with_live && best.group >= 0) {
    int s = step[best.group];
    for (size_t i = 0; i < vals_.size(); ++i)
      if (span[i].first >= 0 && span[i].first <= s && (span[i].second < 0 || span[i].second >= s))
        best.live.push_back({vals_[i].name, vals_[i].bytes});
    std::stable_sort(best.live.begin(), best.live.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  return best;
}

}  // namespace gaf
