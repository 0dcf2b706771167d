#include "fusion/planner/planner.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>

#include "fusion/planner/group_info.h"
#include "fusion/planner/group_schedule.h"
#include "fusion/planner/layout_chains.h"
#include "fusion/planner/peak_memory.h"

namespace gaf {

namespace {

struct WorkGroup {
  FusionKind kind = FusionKind::Single;
  std::string rule;    // the rule that formed it, "generic" for generic grouping, "" single
  bool grown = false;  // a rule's group grown by generic merges
  std::map<MemberRole, int> roles;
  std::string label;  // the rule's kernel label (FusionRule::kernel_label), "" for none
  std::set<int> nodes;
  bool alive = true;
  bool sealed = false;  // formed by a sealed rule (FusionRule::sealed)
};

// A merge that check_merge allowed, with what it computed for it: merge() takes it, so nothing
// is carried between the check and the merge.
struct AllowedMerge {
  std::set<int> members;          // group indices
  int64_t merged_internal = 0;    // the merged group's internal root buffers
  GroupSchedule::Trial schedule;  // the new order and live bytes (local checks)
};

// Every planner decision at debug level (gaf -vv, GAF_LOG_LEVEL=debug); arguments are only
// formatted when debug is on.
bool tracing() { return spdlog::default_logger_raw()->should_log(spdlog::level::debug); }

std::string join_names(const GraphView& v, const std::set<int>& nodes, size_t max = 4) {
  std::string s;
  size_t k = 0;
  for (int n : nodes) {
    if (k++ == max) {
      s += ", ... (" + std::to_string(nodes.size()) + " nodes)";
      break;
    }
    s += (s.empty() ? "'" : ", '") + v.node(n).name + "'";
  }
  return s;
}

class Planner {
 public:
  Planner(const Graph& g, const PlannerOptions& o) : g_(g), v_(g), opts_(o), memory_(v_) {
    for (int i = 0; i < v_.num_nodes(); ++i) {
      WorkGroup w;
      w.nodes.insert(i);
      groups_.push_back(w);
      group_of_.push_back(i);
    }
    if (opts_.whole_graph_checks) {
      if (opts_.check_peak_memory) unfused_peak_ = memory_.peak(group_of_, internal_fn()).bytes;
    } else {
      schedule_.emplace(v_, memory_, group_of_, internal_fn());
      unfused_peak_ = schedule_->peak();
    }
  }

  FusionPlan run(const RuleRegistry& rules) {
    if (opts_.enabled) {
      for (const auto& rule : rules.ordered()) {
        if (opts_.disabled_rules.count(rule->name()) || opts_.disabled_kinds.count(rule->kind())) {
          if (tracing()) spdlog::debug("planner: rule {} is disabled (its rule or kind is switched off)", rule->name());
          continue;
        }
        apply_rule(*rule);
      }
      if (opts_.generic_grouping) generic_grouping();
    }
    return finish();
  }

 private:
  bool skipped(int n) const {
    const Node& node = v_.node(n);
    return opts_.skip_nodes.count(node.name) || opts_.skip_nodes.count(node.op_type) ||
           opts_.keep_apart.count(node.name);
  }

  void refuse(const MergeDecision& d, const std::string& rule, const std::set<int>& nodes) {
    const ReasonCode code = d.code();
    const std::string& msg = d.why();
    RefusedMerge r{code, msg, rule, {}};
    for (int n : nodes) r.nodes.push_back(v_.node(n).name);
    // One refusal per reason and edge: a pair refused again after its groups grew (the next
    // generic wave) keeps the latest message, which names the groups as they ended.
    std::string key = std::string(reason_code_id(code)) + "|" + rule;
    for (const std::string& n : r.nodes) key += "|" + n;
    if (rule != "generic") key += "|" + msg;  // a rule's match: one refusal per reason given
    if (tracing()) spdlog::debug("planner: refused {} [{}] {}", reason_code_id(code), rule, msg);
    auto [it, fresh] = refused_index_.emplace(key, refused_.size());
    if (fresh)
      refused_.push_back(r);
    else
      refused_[it->second].message = msg;
  }

  std::set<int> succ_groups(int gi) const {
    std::set<int> s;
    for (int n : groups_[gi].nodes)
      for (const std::string& o : v_.node(n).outputs)
        for (int c : v_.consumers(o))
          if (group_of_[c] != gi) s.insert(group_of_[c]);
    return s;
  }

  // Merging `members` (group indices) into one is legal w.r.t. cycles iff no path leaves the
  // set and comes back into it through another group. Such a path only passes groups that run
  // between the members (the schedule's order is topological), so the search stops at the last
  // member's step; the whole-graph reference searches everything downstream.
  bool creates_cycle(const std::set<int>& members) const {
    int last_step = std::numeric_limits<int>::max();
    if (schedule_) {
      last_step = -1;
      for (int m : members) last_step = std::max(last_step, schedule_->step(m));
    }
    auto within = [&](int gi) { return !schedule_ || schedule_->step(gi) < last_step; };
    std::deque<int> q;
    std::set<int> seen;
    for (int m : members)
      for (int s : succ_groups(m))
        if (!members.count(s) && within(s) && seen.insert(s).second) q.push_back(s);
    while (!q.empty()) {
      int gi = q.front();
      q.pop_front();
      for (int s : succ_groups(gi)) {
        if (members.count(s)) return true;
        if (within(s) && seen.insert(s).second) q.push_back(s);
      }
    }
    return false;
  }

  // Bytes of group gi's internal root buffers (groups never change once formed, so cached).
  int64_t internal_bytes(int gi) {
    auto it = internal_.find(gi);
    if (it != internal_.end()) return it->second;
    return internal_[gi] =
               internal_root_bytes(v_, std::vector<int>(groups_[gi].nodes.begin(), groups_[gi].nodes.end()));
  }
  std::function<const std::set<int>&(int)> nodes_of() const {
    return [this](int gi) -> const std::set<int>& { return groups_[gi].nodes; };
  }
  std::function<int64_t(int)> internal_fn() {
    return [this](int gi) { return internal_bytes(gi); };
  }

  // The one legality check of every merge, by a rule or by generic grouping: no skipped node
  // (GAF-NF020), the size limit (GAF-NF010), no cycle (GAF-NF002), and the predicted peak memory
  // (GAF-NF003: peak_memory.h — the executor's order and liveness, plus each group's internal
  // root buffers while it runs). `what` names the merge for the sentence ("rule attention:
  // fusing 'a', 'b'", "fusing 'a' into 'b'"). On success `allowed` holds what merge() needs.
  MergeDecision check_merge(const std::set<int>& members, const std::string& what, AllowedMerge* allowed) {
    std::vector<int> nodes;
    for (int m : members) nodes.insert(nodes.end(), groups_[m].nodes.begin(), groups_[m].nodes.end());
    if (MergeDecision skip = check_skipped(nodes, what); !skip) return skip;
    if (static_cast<int>(nodes.size()) > opts_.max_group_size)
      return MergeDecision::refuse(reason::kGroupSize, what + " would make a group of " + std::to_string(nodes.size()) +
                                                           " nodes (limit " + std::to_string(opts_.max_group_size) +
                                                           ")");
    if (creates_cycle(members))
      return MergeDecision::refuse(reason::kCycle,
                                   what +
                                       " would create a cycle (a path leaves the group and re-enters it "
                                       "through another group)");
    allowed->members = members;
    const int id = static_cast<int>(groups_.size());  // the id merge() will give the group
    const int64_t merged_internal = internal_root_bytes(v_, nodes);
    allowed->merged_internal = merged_internal;
    int64_t after = 0, at_peak_internal = 0;
    bool fused_at_peak = false;
    std::vector<std::pair<std::string, int64_t>> live;
    if (schedule_) {
      allowed->schedule = schedule_->try_merge(members, id, merged_internal, group_of_, nodes_of());
      after = allowed->schedule.peak;
      if (!opts_.check_peak_memory || after <= unfused_peak_) return MergeDecision::allow();
      live = schedule_->live_at_peak(allowed->schedule, group_of_);
      fused_at_peak = allowed->schedule.peak_group == id;
      at_peak_internal = allowed->schedule.peak_internal;
    } else {
      if (!opts_.check_peak_memory) return MergeDecision::allow();
      std::vector<int> trial = group_of_;
      for (int n : nodes) trial[n] = id;
      auto internal = [&](int gi) { return gi == id ? merged_internal : internal_bytes(gi); };
      PeakMemoryModel::Peak peak = memory_.peak(trial, internal);
      if (peak.bytes <= unfused_peak_) return MergeDecision::allow();
      peak = memory_.peak(trial, internal, true);
      after = peak.bytes;
      live = peak.live;
      fused_at_peak = peak.group == id;
      at_peak_internal = peak.internal;
    }
    std::string names;
    for (size_t i = 0; i < live.size() && i < 3; ++i)
      names += (names.empty() ? "'" : ", '") + live[i].first + "' (" + std::to_string(live[i].second) + " bytes)";
    if (live.size() > 3) names += " and " + std::to_string(live.size() - 3) + " more";
    std::string at = fused_at_peak ? "while the fused group runs" : "later, while another group runs";
    return MergeDecision::refuse(
        reason::kPeakMemory,
        what + " would raise the predicted peak memory from " + std::to_string(unfused_peak_) + " to " +
            std::to_string(after) + " bytes (" + at + ", " + (names.empty() ? "no stored values" : names) +
            (live.size() == 1 ? " is" : " are") + " live" +
            (at_peak_internal > 0 ? " plus " + std::to_string(at_peak_internal) + " bytes of internal root buffers"
                                  : "") +
            ")");
  }

  MergeDecision check_skipped(const std::vector<int>& nodes, const std::string& what) const {
    for (int n : nodes) {
      if (!skipped(n)) continue;
      auto apart = opts_.keep_apart.find(v_.node(n).name);
      if (apart != opts_.keep_apart.end())
        return MergeDecision::refuse(reason::kMeasuredSlower, what + ": node '" + apart->first + "' " + apart->second);
      return MergeDecision::refuse(reason::kSkipped, what + ": node '" + v_.node(n).name + "' is skipped by the user");
    }
    return MergeDecision::allow();
  }

  // Merges what check_merge allowed into one group formed by `rule` (`grown`: generic grouping
  // grew a rule's group); returns its index.
  int merge(const AllowedMerge& m, FusionKind kind, const std::string& rule, bool grown) {
    if (schedule_) schedule_->commit(m.schedule, group_of_, nodes_of());  // before group_of_ changes
    WorkGroup w;
    w.kind = kind;
    w.rule = rule;
    w.grown = grown;
    for (int gi : m.members) {
      groups_[gi].alive = false;
      w.nodes.insert(groups_[gi].nodes.begin(), groups_[gi].nodes.end());
      w.roles.insert(groups_[gi].roles.begin(), groups_[gi].roles.end());
      if (groups_[gi].rule == rule && w.label.empty()) w.label = groups_[gi].label;
    }
    groups_.push_back(w);
    int id = static_cast<int>(groups_.size()) - 1;
    for (int n : w.nodes) group_of_[n] = id;
    internal_[id] = m.merged_internal;
    return id;
  }

  void apply_rule(const FusionRule& rule) {
    std::vector<RuleMatch> matches =
        rule.find(v_, [this](int n) { return groups_[group_of_[n]].kind == FusionKind::Single; });
    // Larger matches first (a full LayerNorm before its core), then in graph order.
    std::stable_sort(matches.begin(), matches.end(), [&](const RuleMatch& a, const RuleMatch& b) {
      if (a.nodes.size() != b.nodes.size()) return a.nodes.size() > b.nodes.size();
      return v_.topo_position(*std::min_element(a.nodes.begin(), a.nodes.end())) <
             v_.topo_position(*std::min_element(b.nodes.begin(), b.nodes.end()));
    });
    for (const RuleMatch& m : matches) {
      std::set<int> nodes(m.nodes.begin(), m.nodes.end());
      std::set<int> members;
      bool taken = false;
      for (int n : nodes) {
        members.insert(group_of_[n]);
        if (groups_[group_of_[n]].kind != FusionKind::Single) taken = true;
      }
      if (taken) {  // an overlapping (earlier or larger) match won
        if (tracing())
          spdlog::debug("planner: rule {} match {} overlaps a group already formed", rule.name(),
                        join_names(v_, nodes));
        continue;
      }
      AllowedMerge allowed;
      MergeDecision d = check_merge(members, "rule " + rule.name() + ": fusing " + join_names(v_, nodes), &allowed);
      if (!d) {
        refuse(d, rule.name(), nodes);
        continue;
      }
      if (tracing())
        spdlog::debug("planner: rule {} grouped {} ({})", rule.name(), join_names(v_, nodes, 64),
                      fusion_kind_name(rule.kind()));
      WorkGroup& formed = groups_[merge(allowed, rule.kind(), rule.name(), false)];
      formed.sealed = rule.sealed();
      formed.roles = m.roles;
      formed.label = rule.kernel_label();
    }
  }

  bool all_map(int gi) const {
    for (int n : groups_[gi].nodes)
      if (!is_map_class(v_.op_class(n))) return false;
    return true;
  }
  bool has_class(int gi, OpClass c) const {
    for (int n : groups_[gi].nodes)
      if (v_.op_class(n) == c) return true;
    return false;
  }

  struct Candidate {
    int producer, consumer;  // group indices
    int64_t bytes_saved;
    int distance;
  };

  // One producer node -> consumer node edge between two groups (named in refusals).
  std::set<int> edge_between(int p, int c) const {
    for (int n : groups_[p].nodes)
      for (const std::string& o : v_.node(n).outputs)
        for (int k : v_.consumers(o))
          if (group_of_[k] == c) return {n, k};
    return {};
  }

  int64_t value_bytes(const std::string& v) const {
    const TensorType& t = g_.value(v).type;
    return shape_numel(t.shape()) * static_cast<int64_t>(dtype_size(t.dtype));
  }

  // Bytes no longer written and read back if P and C run as one pipeline.
  int64_t saving(int p, int c) {
    int64_t s = 0;
    for (int n : groups_[p].nodes)
      for (const std::string& o : v_.node(n).outputs) {
        if (o.empty() || v_.is_graph_output(o)) continue;
        const auto& cons = v_.consumers(o);
        if (cons.empty()) continue;
        bool feeds_c = false, all_in = true;
        for (int k : cons) {
          feeds_c = feeds_c || group_of_[k] == c;
          all_in = all_in && (group_of_[k] == c || group_of_[k] == p);
        }
        if (feeds_c && all_in) s += 2 * value_bytes(o);
      }
    // A buffer the merged group computes at root without handing it out is written and read
    // again inside it: its traffic is not saved. (A MatMul that a multi-output Split joins is
    // computed at root, then split: GPT-2's wide Q|K|V into its projection's group, where the
    // attention group reads it through a layout prologue instead.) Only groups with a non-map
    // member can have such buffers.
    if (s > 0 && (!all_map(p) || !all_map(c))) {
      std::set<int> nodes = both_nodes(p, c);
      s -= 2 * (internal_root_bytes(v_, std::vector<int>(nodes.begin(), nodes.end())) - internal_bytes(p) -
                internal_bytes(c));
    }
    return s;
  }

  // `k`, in group c, reads group p's output. When k is a MatMul, or a layout node of c from
  // which c's layout nodes lead to a MatMul, that operand's in-group chain — p's nodes and those
  // layout nodes — must be a valid layout prologue (layout_chains.h): checking p alone would let
  // a Transpose or an elementwise op reach the MatMul through a Reshape that joined it first.
  std::string prologue_refusal(int p, int c, int k) const {
    std::set<int> chain = groups_[p].nodes, seen;
    std::vector<int> todo{k};
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (group_of_[x] != c || !seen.insert(x).second) continue;
      if (v_.op_class(x) == OpClass::MatMul) {
        std::string why = layout_prologue_refusal(v_, chain, x);
        if (!why.empty()) return why;
        continue;
      }
      if (v_.op_class(x) != OpClass::Injective) continue;
      chain.insert(x);
      for (const std::string& o : v_.node(x).outputs)
        for (int y : v_.consumers(o)) todo.push_back(y);
    }
    return "";
  }

  // Op-class legality of a generic producer->consumer merge (`what` names it).
  MergeDecision class_check(int p, int c, const std::string& what) const {
    std::set<int> both = both_nodes(p, c);
    if (MergeDecision skip = check_skipped(std::vector<int>(both.begin(), both.end()), what); !skip) return skip;
    if (has_class(p, OpClass::Comm) || has_class(c, OpClass::Comm))
      return MergeDecision::refuse(reason::kClasses, what +
                                                         ": a collective runs through the communicator, not inside a "
                                                         "kernel; only the comm_compute rule fuses work with it");
    if (all_map(p)) {
      for (int n : groups_[p].nodes)
        for (const std::string& o : v_.node(n).outputs)
          for (int k : v_.consumers(o)) {
            if (group_of_[k] != c) continue;
            if (v_.op_class(k) == OpClass::MatMul || v_.op_class(k) == OpClass::Injective) {
              // Layout work is index arithmetic on the operand read (layout_chains.h); the
              // broadcast check below does not apply to an operand.
              std::string why = prologue_refusal(p, c, k);
              if (!why.empty()) return MergeDecision::refuse(reason::kDuplicateWork, what + ": " + why);
              if (v_.op_class(k) == OpClass::MatMul) continue;
            }
            if (!v_.node(k).outputs.empty() && !v_.node(k).outputs[0].empty() &&
                value_bytes(o) < value_bytes(v_.node(k).outputs[0]) &&
                g_.value(o).type.dtype == g_.value(v_.node(k).outputs[0]).type.dtype)
              return MergeDecision::refuse(reason::kShapes,
                                           what + ": '" + v_.node(n).name + "' " + g_.value(o).type.str() +
                                               " is broadcast by '" + v_.node(k).name +
                                               "'; inlined it would be recomputed for every output element");
          }
      return MergeDecision::allow();
    }
    if (all_map(c)) return MergeDecision::allow();  // epilogue
    return MergeDecision::refuse(reason::kClasses, what + ": a " + std::string(fusion_kind_name(groups_[p].kind)) +
                                                       " group and a " + fusion_kind_name(groups_[c].kind) +
                                                       " group cannot fuse (only elementwise/layout work fuses into "
                                                       "another group's prologue or epilogue)");
  }

  FusionKind merged_kind(int p, int c) const {
    for (int gi : {p, c})
      if (groups_[gi].kind != FusionKind::Single && groups_[gi].kind != FusionKind::Elementwise)
        return groups_[gi].kind;
    if (has_class(p, OpClass::MatMul) || has_class(c, OpClass::MatMul)) return FusionKind::MatMulEpilogue;
    if (has_class(p, OpClass::Reduction) || has_class(c, OpClass::Reduction)) return FusionKind::Normalization;
    return FusionKind::Elementwise;
  }

  // The rule a generic merge's group carries: the rule group's among the two (then grown),
  // else "generic".
  std::pair<std::string, bool> merged_rule(int p, int c) const {
    for (int gi : {p, c}) {
      const WorkGroup& w = groups_[gi];
      if (w.kind == FusionKind::Single || w.rule == "generic") continue;
      return {w.rule, true};
    }
    return {"generic", false};
  }

  std::set<int> both_nodes(int p, int c) const {
    std::set<int> s = groups_[p].nodes;
    s.insert(groups_[c].nodes.begin(), groups_[c].nodes.end());
    return s;
  }

  void generic_grouping() {
    for (bool changed = true; changed;) {
      changed = false;
      bool saved_bytes = false;  // a merge saving bytes happened in this wave
      std::vector<Candidate> cands;
      std::set<std::pair<int, int>> seen;
      for (size_t p = 0; p < groups_.size(); ++p) {
        if (!groups_[p].alive) continue;
        for (int c : succ_groups(static_cast<int>(p))) {
          if (!seen.insert({static_cast<int>(p), c}).second) continue;
          int dist = v_.topo_position(*groups_[c].nodes.begin()) - v_.topo_position(*groups_[p].nodes.rbegin());
          cands.push_back({static_cast<int>(p), c, saving(static_cast<int>(p), c), std::abs(dist)});
        }
      }
      std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
        if (a.bytes_saved != b.bytes_saved) return a.bytes_saved > b.bytes_saved;
        return a.distance < b.distance;
      });
      for (const Candidate& cd : cands) {
        // Launch-only merges wait for a wave in which nothing saving bytes merged: a chain
        // merged just now may still join its consumer (a Slice of the wide QKV output, then its
        // Reshape, into the attention MatMul that reads it), which the launch-only merge of the
        // Slice into its producer would pre-empt.
        if (cd.bytes_saved <= 0 && saved_bytes) break;
        if (!groups_[cd.producer].alive || !groups_[cd.consumer].alive) continue;
        if (groups_[cd.producer].sealed || groups_[cd.consumer].sealed) {
          if (tracing())
            spdlog::debug("planner: not growing {} / {}: a sealed rule's group (its own generate step)",
                          join_names(v_, groups_[cd.producer].nodes, 2), join_names(v_, groups_[cd.consumer].nodes, 2));
          continue;
        }
        std::set<int> edge = edge_between(cd.producer, cd.consumer);
        const std::string what = "fusing " + join_names(v_, groups_[cd.producer].nodes, 2) + " into " +
                                 join_names(v_, groups_[cd.consumer].nodes, 2);
        if (MergeDecision d = class_check(cd.producer, cd.consumer, what); !d) {
          if (d.code() != reason::kClasses || opts_.report_class_refusals) refuse(d, "generic", edge);
          continue;
        }
        if (cd.bytes_saved <= 0 && !opts_.fuse_for_launches) {
          if (tracing()) spdlog::debug("planner: not {}: saves no memory traffic", what);
          continue;
        }
        FusionKind kind = merged_kind(cd.producer, cd.consumer);
        if (opts_.disabled_kinds.count(kind)) {
          if (tracing()) spdlog::debug("planner: not {}: kind {} is disabled", what, fusion_kind_name(kind));
          continue;
        }
        AllowedMerge allowed;
        if (MergeDecision d = check_merge({cd.producer, cd.consumer}, what, &allowed); !d) {
          refuse(d, "generic", edge);
          continue;
        }
        auto [rule, grown] = merged_rule(cd.producer, cd.consumer);
        if (tracing())
          spdlog::debug("planner: generic: {} ({} bytes saved) -> {} group, rule {}{}", what, cd.bytes_saved,
                        fusion_kind_name(kind), rule, grown ? " (grown)" : "");
        merge(allowed, kind, rule, grown);
        changed = true;
        saved_bytes = saved_bytes || cd.bytes_saved > 0;
      }
    }
  }

  FusionPlan finish() {
    FusionPlan plan;
    plan.group_of_node.assign(v_.num_nodes(), -1);
    // The order the executor runs them in, which the peak-memory check assumed too.
    for (int gi : memory_.execution_order(group_of_)) {
      FusionGroup fg;
      fg.id = static_cast<int>(plan.groups.size());
      fg.kind = groups_[gi].kind;
      fg.rule = groups_[gi].rule;
      fg.grown = groups_[gi].grown;
      fg.roles = groups_[gi].roles;
      fg.kernel.label = groups_[gi].label;  // describe_group makes one where the rule has none
      fg.nodes.assign(groups_[gi].nodes.begin(), groups_[gi].nodes.end());
      std::sort(fg.nodes.begin(), fg.nodes.end(),
                [&](int a, int b) { return v_.topo_position(a) < v_.topo_position(b); });
      for (int n : fg.nodes) plan.group_of_node[n] = fg.id;
      plan.groups.push_back(fg);
    }
    for (FusionGroup& fg : plan.groups) {
      describe_group(v_, fg);
      if (!tracing()) continue;
      for (const FuncDecision& d : fg.decisions)
        spdlog::debug("planner: g{} ({}): '{}' is {}{} - {}", fg.id, fusion_kind_name(fg.kind), d.value,
                      compute_decision_name(d.decision), d.at.empty() ? "" : " " + d.at, d.reason);
    }
    // A generic refusal whose edge a later wave merged after all (its groups grew) is stale.
    std::map<std::string, int> group_by_name;
    for (int i = 0; i < v_.num_nodes(); ++i) group_by_name[v_.node(i).name] = plan.group_of_node[i];
    for (const RefusedMerge& r : refused_) {
      bool merged = r.rule == "generic" && r.nodes.size() >= 2;
      for (const std::string& n : r.nodes) merged = merged && group_by_name[n] == group_by_name[r.nodes[0]];
      if (!merged) plan.refused.push_back(r);
    }
    return plan;
  }

  const Graph& g_;
  GraphView v_;
  PlannerOptions opts_;
  std::vector<WorkGroup> groups_;
  std::vector<int> group_of_;
  std::vector<RefusedMerge> refused_;
  std::map<std::string, size_t> refused_index_;  // reason|rule|nodes -> index in refused_
  PeakMemoryModel memory_;
  std::optional<GroupSchedule> schedule_;  // the running order and live bytes (not with whole_graph_checks)
  std::map<int, int64_t> internal_;        // group index -> internal root bytes
  // The limit of every merge: the unfused schedule's predicted peak. Not the current grouping's
  // peak: a merge that lowers it (a gated MLP that never stores its up projection) would
  // otherwise make later merges elsewhere that stay under the unfused peak fail (Llama at hidden
  // 768: 121 -> 133 kernels).
  int64_t unfused_peak_ = 0;
};

}  // namespace

FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts, const RuleRegistry& rules) {
  opts.validate(rules);
  return Planner(g, opts).run(rules);
}

FusionPlan plan_fusion_rewriting(Graph& g, const PlannerOptions& opts, const RuleRegistry& rules) {
  opts.validate(rules);
  RewriteLog log;
  std::vector<PassRun> passes;
  auto skipped = [&](const Node& n) { return opts.skip_nodes.count(n.name) || opts.skip_nodes.count(n.op_type); };
  if (opts.enabled)
    for (const auto& rule : rules.ordered())
      if (!opts.disabled_rules.count(rule->name()) && !opts.disabled_kinds.count(rule->kind())) {
        const size_t applied = log.applied.size(), refused = log.refused.size();
        rule->rewrite(g, skipped, log);
        if (log.applied.size() > applied || log.refused.size() > refused)  // a rule that rewrites, here
          passes.push_back(PassRun{rule->name(), std::to_string(log.applied.size() - applied) + " rewrites, " +
                                                     std::to_string(log.refused.size() - refused) + " refused"});
      }
  FusionPlan p = plan_fusion(g, opts, rules);
  p.rewrites = std::move(log.applied);
  p.source_nodes = std::move(log.source_nodes);
  p.refused.insert(p.refused.begin(), log.refused.begin(), log.refused.end());
  int fused = 0;
  for (const FusionGroup& grp : p.groups) fused += grp.nodes.size() > 1;
  passes.push_back(PassRun{"group", std::to_string(p.groups.size()) + " groups, " + std::to_string(fused) +
                                        " of them fused, " + std::to_string(p.refused.size()) + " refused merges"});
  p.passes = std::move(passes);
  return p;
}

FusionPlan plan_fusion(const Graph& g, const PlannerOptions& opts) {
  return plan_fusion(g, opts, RuleRegistry::builtin());
}

}  // namespace gaf
