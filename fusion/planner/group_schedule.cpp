#include "fusion/planner/group_schedule.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <queue>
#include <unordered_set>

namespace gaf {

GroupSchedule::GroupSchedule(const GraphView& v, const PeakMemoryModel& model, const std::vector<int>& group_of,
                             std::function<int64_t(int)> internal_bytes)
    : v_(v), internal_bytes_(std::move(internal_bytes)), vals_(model.values()) {
  const int n = v.num_nodes();
  produced_.resize(n);
  read_.resize(n);
  for (size_t idx = 0; idx < vals_.size(); ++idx) {
    produced_[vals_[idx].producer].push_back(static_cast<int>(idx));
    for (int c : vals_[idx].consumers)
      if (read_[c].empty() || read_[c].back() != static_cast<int>(idx)) read_[c].push_back(static_cast<int>(idx));
  }
  int ids = 0;
  for (int g : group_of) ids = std::max(ids, g + 1);
  step_of_.assign(ids, -1);
  first_.assign(ids, std::numeric_limits<int>::max());
  for (int node = 0; node < n; ++node) first_[group_of[node]] = std::min(first_[group_of[node]], v.topo_position(node));
  order_ = model.execution_order(group_of);
  for (size_t s = 0; s < order_.size(); ++s) step_of_[order_[s]] = static_cast<int>(s);

  while (leaves_ < static_cast<int>(std::max<size_t>(order_.size(), 1))) leaves_ *= 2;
  max_.assign(2 * leaves_, 0);
  add_.assign(2 * leaves_, 0);
  Trial none;  // the current grouping as it is
  interval_.resize(vals_.size());
  for (size_t i = 0; i < vals_.size(); ++i) {
    interval_[i] = interval_after(none, group_of, static_cast<int>(i));
    if (interval_[i].from >= 0) tree_add(interval_[i].from, interval_[i].to, vals_[i].bytes);
  }
  for (size_t s = 0; s < order_.size(); ++s)
    tree_add(static_cast<int>(s), static_cast<int>(s), internal_bytes_(order_[s]));
}

void GroupSchedule::tree_add(int node, int l, int r, int lo, int hi, int64_t d) {
  if (hi < l || r < lo) return;
  if (lo <= l && r <= hi) {
    max_[node] += d;
    add_[node] += d;
    return;
  }
  const int mid = (l + r) / 2;
  tree_add(2 * node, l, mid, lo, hi, d);
  tree_add(2 * node + 1, mid + 1, r, lo, hi, d);
  max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
}

std::pair<int64_t, int> GroupSchedule::tree_max() const {
  int node = 1;
  while (node < leaves_) node = max_[2 * node] >= max_[2 * node + 1] ? 2 * node : 2 * node + 1;
  return {max_[1], node - leaves_};
}

int64_t GroupSchedule::peak() const { return max_[1]; }

int GroupSchedule::group_after(const Trial& t, const std::vector<int>& group_of, int node) const {
  const int g = group_of[node];
  return t.members.count(g) ? t.id : g;
}

int GroupSchedule::step_after(const Trial& t, int group) const {
  auto it = t.moved.find(group);
  return it != t.moved.end() ? it->second : step_of_[group];
}

int64_t GroupSchedule::internal_of(const Trial& t, int group) const {
  return group == t.id ? t.internal : internal_bytes_(group);
}

// A value is stored when a group other than its producer's reads it, or it is a graph output;
// it is live from its producer's step to its last reader's (graph outputs: to the end).
GroupSchedule::Interval GroupSchedule::interval_after(const Trial& t, const std::vector<int>& group_of,
                                                      int value) const {
  const ValueUse& val = vals_[value];
  const int home = group_after(t, group_of, val.producer);
  int last = -1;
  for (int c : val.consumers) {
    const int gc = group_after(t, group_of, c);
    if (gc != home) last = std::max(last, step_after(t, gc));
  }
  if (last < 0 && !val.graph_output) return {};
  const int at = step_after(t, home);
  return {at, val.graph_output ? leaves_ - 1 : std::max(last, at)};
}

void GroupSchedule::place_by_kahn(Trial& t, int lo, int hi, const std::vector<int>& group_of,
                                  const std::function<const std::set<int>&(int)>& nodes_of) const {
  std::vector<int> window;
  for (int s = lo; s <= hi; ++s)
    if (order_[s] >= 0 && !t.members.count(order_[s])) window.push_back(order_[s]);
  window.push_back(t.id);
  std::unordered_map<int, int> index;
  for (size_t i = 0; i < window.size(); ++i) index[window[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> succ(window.size());
  std::vector<int> indeg(window.size(), 0);
  auto add_edges = [&](int from, const std::set<int>& nodes) {
    std::unordered_set<int> seen;
    for (int n : nodes)
      for (int idx : produced_[n])
        for (int k : vals_[idx].consumers) {
          auto it = index.find(group_after(t, group_of, k));
          if (it == index.end() || it->second == from || !seen.insert(it->second).second) continue;
          succ[from].push_back(it->second);
          ++indeg[it->second];
        }
  };
  const int merged = static_cast<int>(window.size()) - 1;
  for (int i = 0; i < merged; ++i) add_edges(i, nodes_of(window[i]));
  for (int m : t.members) add_edges(merged, nodes_of(m));
  int first = std::numeric_limits<int>::max();
  for (int m : t.members) first = std::min(first, first_[m]);
  auto first_of = [&](int i) { return i == merged ? first : first_[window[i]]; };
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (size_t i = 0; i < window.size(); ++i)
    if (indeg[i] == 0) ready.push({first_of(static_cast<int>(i)), static_cast<int>(i)});
  int next = lo;
  while (!ready.empty()) {
    const int i = ready.top().second;
    ready.pop();
    if (window[i] == t.id || step_of_[window[i]] != next) t.moved[window[i]] = next;
    ++next;
    for (int s : succ[i])
      if (--indeg[s] == 0) ready.push({first_of(s), s});
  }
}

void GroupSchedule::place_around(Trial& t, int lo, int hi, const std::vector<int>& group_of,
                                 const std::function<const std::set<int>&(int)>& nodes_of) const {
  // Groups inside the window that the members reach (after) and that reach them (before).
  auto search = [&](bool forward) {
    std::vector<int> found;
    std::unordered_set<int> seen(t.members.begin(), t.members.end());
    std::deque<int> todo(t.members.begin(), t.members.end());
    while (!todo.empty()) {
      const int g = todo.front();
      todo.pop_front();
      for (int n : nodes_of(g)) {
        auto visit = [&](int k) {
          const int gk = group_of[k];
          const int s = step_of_[gk];
          if (s <= lo || s >= hi || !seen.insert(gk).second) return;
          found.push_back(gk);
          todo.push_back(gk);
        };
        if (forward) {
          for (int idx : produced_[n])
            for (int k : vals_[idx].consumers) visit(k);
        } else {
          for (int idx : read_[n]) visit(vals_[idx].producer);
        }
      }
    }
    std::sort(found.begin(), found.end(), [&](int a, int b) { return step_of_[a] < step_of_[b]; });
    return found;
  };
  const std::vector<int> after = search(true), before = search(false);
  std::vector<int> slots;
  for (int g : before) slots.push_back(step_of_[g]);
  for (int g : after) slots.push_back(step_of_[g]);
  for (int m : t.members) slots.push_back(step_of_[m]);
  std::sort(slots.begin(), slots.end());
  size_t k = 0;
  for (int g : before) t.moved[g] = slots[k++];
  t.moved[t.id] = slots[k++];
  for (int g : after) t.moved[g] = slots[k++];
}

void GroupSchedule::apply(const Trial& t, int sign, bool keep, const std::vector<int>& group_of,
                          const std::function<const std::set<int>&(int)>& nodes_of) {
  std::unordered_set<int> touched;  // values whose interval can change
  auto touch = [&](int g) {
    for (int n : nodes_of(g)) {
      touched.insert(produced_[n].begin(), produced_[n].end());
      touched.insert(read_[n].begin(), read_[n].end());
    }
  };
  for (int m : t.members) touch(m);
  for (const auto& [g, s] : t.moved)
    if (g != t.id) touch(g);
  for (int idx : touched) {
    const Interval before = interval_[idx], after = interval_after(t, group_of, idx);
    if (before.from == after.from && before.to == after.to) continue;
    const int64_t b = vals_[idx].bytes * sign;
    if (before.from >= 0) tree_add(before.from, before.to, -b);
    if (after.from >= 0) tree_add(after.from, after.to, b);
    if (keep) interval_[idx] = after;
  }
  for (int m : t.members) tree_add(step_of_[m], step_of_[m], -internal_bytes_(m) * sign);
  for (const auto& [g, s] : t.moved) {
    if (g != t.id) tree_add(step_of_[g], step_of_[g], -internal_bytes_(g) * sign);
    tree_add(s, s, internal_of(t, g) * sign);
  }
  if (!keep) return;
  for (int m : t.members) order_[step_of_[m]] = -1;
  for (const auto& [g, s] : t.moved)
    if (g != t.id) order_[step_of_[g]] = -1;
  if (t.id >= static_cast<int>(step_of_.size())) {
    step_of_.resize(t.id + 1, -1);
    first_.resize(t.id + 1, std::numeric_limits<int>::max());
  }
  for (int m : t.members) {
    first_[t.id] = std::min(first_[t.id], first_[m]);
    step_of_[m] = -1;
  }
  for (const auto& [g, s] : t.moved) {
    order_[s] = g;
    step_of_[g] = s;
  }
}

GroupSchedule::Trial GroupSchedule::try_merge(const std::set<int>& members, int id, int64_t internal,
                                              const std::vector<int>& group_of,
                                              const std::function<const std::set<int>&(int)>& nodes_of) {
  Trial t;
  t.id = id;
  t.members = members;
  t.internal = internal;
  int lo = std::numeric_limits<int>::max(), hi = -1;
  for (int m : members) {
    lo = std::min(lo, step_of_[m]);
    hi = std::max(hi, step_of_[m]);
  }
  if (hi - lo < kKahnWindow)
    place_by_kahn(t, lo, hi, group_of, nodes_of);
  else
    place_around(t, lo, hi, group_of, nodes_of);
  apply(t, 1, false, group_of, nodes_of);
  auto [peak, at] = tree_max();
  apply(t, -1, false, group_of, nodes_of);
  t.peak = peak;
  int running = at < static_cast<int>(order_.size()) ? order_[at] : -1;
  if (running >= 0 && (t.members.count(running) || t.moved.count(running))) running = -1;  // moved away
  for (const auto& [g, s] : t.moved)
    if (s == at) running = g;
  t.peak_group = running;
  t.peak_internal = running >= 0 ? internal_of(t, running) : 0;
  return t;
}

void GroupSchedule::commit(const Trial& t, const std::vector<int>& group_of,
                           const std::function<const std::set<int>&(int)>& nodes_of) {
  apply(t, 1, true, group_of, nodes_of);
}

std::vector<std::pair<std::string, int64_t>> GroupSchedule::live_at_peak(const Trial& t,
                                                                         const std::vector<int>& group_of) const {
  std::vector<std::pair<std::string, int64_t>> live;
  if (t.peak_group < 0) return live;
  const int at_peak = step_after(t, t.peak_group);
  for (size_t i = 0; i < vals_.size(); ++i) {
    const Interval iv = interval_after(t, group_of, static_cast<int>(i));
    if (iv.from >= 0 && iv.from <= at_peak && at_peak <= iv.to) live.push_back({vals_[i].name, vals_[i].bytes});
  }
  std::stable_sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return live;
}

}  // namespace gaf
