// The planner's running picture of the grouping it is building: the groups' execution order (a
// topological order of the contracted graph, one step per group) and the memory live at each step
// as peak_memory.h models it. A merge is tried and committed by moving only the groups whose step
// it changes, so checking a merge costs what it touches, not the size of the graph.
//
// The bytes live at a step are a sum of intervals: a stored value is live from its producer's
// step to its last reader's (to the end for graph outputs), plus the running group's internal root
// buffers. A segment tree with range adds holds them per step, so moving a group re-adds only the
// intervals of the values its nodes produce or read, and the peak is the tree's maximum.
//
// Where the merged group goes: merging groups at steps lo < hi only reorders groups between them.
//   - A window of at most kKahnWindow steps is reordered by Kahn's rule among its groups (the one
//     whose earliest node comes first), as PeakMemoryModel::execution_order orders the whole
//     graph: for the small windows of rule and epilogue merges this is the whole-graph order.
//   - A wider window (a merge across a fan-out) keeps every group in place but the members, the
//     groups they reach inside the window (moved after the merged group) and the groups that reach
//     them (moved before it), as a dynamic topological sort does; the rest of the window stays.
// Steps emptied by merges stay as holes. FusionPlan's order is always the whole-graph one (the
// planner's finish step); the planner tests compare plans with the whole-graph checks.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusion/planner/pattern.h"
#include "fusion/planner/peak_memory.h"

namespace gaf {

class GroupSchedule {
 public:
  static constexpr int kKahnWindow = 64;

  // `group_of[n]`: the group id of node n, in the order `model` gives (`model` must outlive this:
  // its value table is shared). `internal_bytes(id)`: the group's internal root buffers (merged
  // groups get fresh ids from the planner).
  GroupSchedule(const GraphView& v, const PeakMemoryModel& model, const std::vector<int>& group_of,
                std::function<int64_t(int)> internal_bytes);

  int64_t peak() const;
  // The step of a live group (its position in the current order).
  int step(int group) const { return step_of_.at(group); }

  // A merge tried but not yet committed.
  struct Trial {
    int id = -1;                         // the merged group's id
    std::set<int> members;               // the groups merged
    int64_t internal = 0;                // the merged group's internal root buffers
    std::unordered_map<int, int> moved;  // group -> its new step (members: -1; the merged group too)
    int64_t peak = 0;                    // the grouping's predicted peak once merged
    int peak_group = -1;                 // the group running at that peak
    int64_t peak_internal = 0;           // its internal root buffers
  };
  // Merging the groups `members` into one group `id` with `internal` bytes of internal root
  // buffers. `group_of` is the planner's node -> group before the merge; `nodes_of(g)` lists a
  // group's nodes. The members must not form a cycle with the rest (the planner checks first).
  Trial try_merge(const std::set<int>& members, int id, int64_t internal, const std::vector<int>& group_of,
                  const std::function<const std::set<int>&(int)>& nodes_of);
  void commit(const Trial& t, const std::vector<int>& group_of,
              const std::function<const std::set<int>&(int)>& nodes_of);
  // The stored values live while `t.peak_group` runs, largest first (for the refusal sentence).
  std::vector<std::pair<std::string, int64_t>> live_at_peak(const Trial& t, const std::vector<int>& group_of) const;

 private:
  struct Interval {
    int from = -1, to = -1;  // steps the value is live at (inclusive); from < 0: not stored
  };
  // Where each group of the window goes (Trial::moved).
  void place_by_kahn(Trial& t, int lo, int hi, const std::vector<int>& group_of,
                     const std::function<const std::set<int>&(int)>& nodes_of) const;
  void place_around(Trial& t, int lo, int hi, const std::vector<int>& group_of,
                    const std::function<const std::set<int>&(int)>& nodes_of) const;
  // Applies the trial's moves to the live-bytes tree (sign -1 undoes them); with `keep`, also to
  // the order and the values' intervals.
  void apply(const Trial& t, int sign, bool keep, const std::vector<int>& group_of,
             const std::function<const std::set<int>&(int)>& nodes_of);
  int group_after(const Trial& t, const std::vector<int>& group_of, int node) const;
  int step_after(const Trial& t, int group) const;
  Interval interval_after(const Trial& t, const std::vector<int>& group_of, int value) const;
  int64_t internal_of(const Trial& t, int group) const;

  // The segment tree: range add, maximum with its step.
  void tree_add(int lo, int hi, int64_t d) { tree_add(1, 0, leaves_ - 1, lo, hi, d); }
  void tree_add(int node, int l, int r, int lo, int hi, int64_t d);
  std::pair<int64_t, int> tree_max() const;

  const GraphView& v_;
  std::function<int64_t(int)> internal_bytes_;
  const std::vector<ValueUse>& vals_;              // the model's
  std::vector<Interval> interval_;                 // per value, in the current order
  std::vector<std::vector<int>> produced_, read_;  // node -> indices into vals_
  std::vector<int> order_;                         // step -> group id (-1: a hole)
  std::vector<int> step_of_;                       // group id -> step (-1: not live)
  std::vector<int> first_;                         // group id -> topological position of its earliest node
  int leaves_ = 1;
  std::vector<int64_t> max_, add_;  // per tree node: max of its range (adds below included), pending add
};

}  // namespace gaf
