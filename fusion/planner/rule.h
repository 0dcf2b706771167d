// Fusion rules: a named, prioritised way of finding groups. Built-in rules live one per file
// (rules_*.cpp); users register their own through RuleRegistry::add (see docs/CUSTOM_RULES.md).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/planner/pattern.h"
#include "fusion/planner/plan.h"

namespace gaf {

struct RuleMatch {
  std::vector<int> nodes;           // the group's nodes (any order)
  std::map<MemberRole, int> roles;  // what some of them are in the rule's pattern
};

// What the rules' graph rewrites did (plan_fusion_rewriting): one sentence per rewrite, starting
// with its verb ("Rewrote horizontal MatMul: ...", "Folded BatchNormalization 'bn' into 'mm'"),
// and the rewrites a rule considered and refused, with reason codes.
struct RewriteLog {
  std::vector<std::string> applied;
  std::vector<RefusedMerge> refused;
  // Nodes a rewrite made -> the source nodes (of the graph as loaded) each one replaces.
  std::map<std::string, std::vector<std::string>> source_nodes;
};

class FusionRule {
 public:
  FusionRule(std::string name, FusionKind kind, int priority)
      : name_(std::move(name)), kind_(kind), priority_(priority) {}
  virtual ~FusionRule() = default;
  const std::string& name() const { return name_; }
  FusionKind kind() const { return kind_; }
  int priority() const { return priority_; }  // higher first
  // Candidate groups in the graph among the nodes for which `available` holds (not yet in a
  // group); the planner checks legality and overlaps.
  virtual std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const = 0;
  virtual std::string describe() const { return name_; }
  // What reports call the kernels of this rule's groups ("Attention", "LayerNorm"); empty: a
  // label made from the group's ops (KernelSpec::label).
  const std::string& kernel_label() const { return kernel_label_; }
  void set_kernel_label(std::string label) { kernel_label_ = std::move(label); }
  // Groups this rule forms are final: generic grouping does not merge anything into them.
  virtual bool sealed() const { return false; }
  // A graph rewrite run before any grouping, by plan_fusion_rewriting, for every enabled rule in
  // priority order (horizontal MatMul, BatchNormalization folding). `g` is typed on entry and
  // must be typed and valid on exit; nodes for which `skipped` holds (the user's --skip) are left
  // alone. Most rules only find groups and keep this default.
  virtual void rewrite(Graph& g, const std::function<bool(const Node&)>& skipped, RewriteLog& log) const {
    (void)g;
    (void)skipped;
    (void)log;
  }

 private:
  std::string name_;
  FusionKind kind_;
  int priority_;
  std::string kernel_label_;
};

// A rule given by a pattern: every match becomes a candidate group.
class PatternRule : public FusionRule {
 public:
  PatternRule(std::string name, FusionKind kind, int priority, Pattern p)
      : FusionRule(std::move(name), kind, priority), pattern_(std::move(p)) {}
  std::vector<RuleMatch> find(const GraphView& g, const std::function<bool(int)>& available) const override;
  std::string describe() const override { return name() + ": " + pattern_.str(); }

 private:
  Pattern pattern_;
};

// Priority bands, highest first: user rules, normalization, MatMul epilogue, horizontal MatMul,
// elementwise; communication + compute sits above the normalizations (see below).
namespace rule_priority {
constexpr int kUser = 500;
constexpr int kNormalization = 400;
constexpr int kMatMulEpilogue = 300;
constexpr int kHorizontalMatMul = 250;
// Above the normalizations, not in list order: its pattern ends in a norm, which the
// normalization rules would otherwise take first (matmul_layernorm sits there for the same reason).
constexpr int kCommCompute = kNormalization + 60;
constexpr int kElementwise = 100;
}  // namespace rule_priority

class RuleRegistry {
 public:
  // The built-in rules (a fresh copy: callers may add their own rules to it).
  static RuleRegistry builtin();
  void add(std::shared_ptr<const FusionRule> rule);
  // Rules by descending priority (stable by registration order).
  std::vector<std::shared_ptr<const FusionRule>> ordered() const;
  const FusionRule* find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::shared_ptr<const FusionRule>> rules_;
};

}  // namespace gaf
