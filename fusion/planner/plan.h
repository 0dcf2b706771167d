// FusionPlan: the planner's output and the only thing the fused executor and the reports read.
// Groups of nodes (each run as one Halide pipeline), what each member's Func is computed as, the
// predicted memory traffic, and every merge the planner refused with a reason code.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fusion/planner/kernel_spec.h"

namespace gaf {

// The five fusion kinds of graph-autofusion, plus "single" for a node left on its own.
enum class FusionKind { Elementwise, MatMulEpilogue, Normalization, HorizontalMatMul, CommCompute, Custom, Single };
const char* fusion_kind_name(FusionKind k);  // "elementwise", "matmul_epilogue", ...
bool parse_fusion_kind(const std::string& s, FusionKind* out);
std::vector<std::string> fusion_kind_names();  // the user-facing kinds (not "single")

// How a member's Func is computed inside the group's pipeline.
enum class ComputeDecision { Inline, ComputeAt, Root };
const char* compute_decision_name(ComputeDecision d);  // "inline", "compute_at", "root"

struct FuncDecision {
  std::string value;  // the node output (or "<node>:<stage>") the decision is about
  ComputeDecision decision = ComputeDecision::Inline;
  std::string at;      // for compute_at: the consumer and loop level, e.g. "y@row"
  int at_output = -1;  // for compute_at: that consumer, as an index into FusionGroup::outputs
  std::string reason;  // one short sentence
};

struct FusionGroup {
  int id = -1;
  FusionKind kind = FusionKind::Single;
  std::string rule;                  // rule that formed it ("generic" for op-class grouping)
  bool grown = false;                // a rule's group that generic grouping grew further
  std::map<MemberRole, int> roles;   // node index (into Graph::nodes()) per role the rule matched
  std::vector<int> nodes;            // indices into Graph::nodes(), in topological order
  std::vector<std::string> inputs;   // values read from outside the group (incl. weights)
  std::vector<std::string> outputs;  // values used outside the group or graph outputs
  std::vector<FuncDecision> decisions;
  int64_t bytes_unfused = 0;  // traffic if every member ran alone
  int64_t bytes_fused = 0;    // traffic of the group run as one pipeline
  std::string signature;      // kernel de-dup and schedule database key
  KernelSpec kernel;          // what its kernel is (kernel_spec.h), from describe_group
  int64_t bytes_saved() const { return bytes_unfused - bytes_fused; }
  int launches_saved() const { return static_cast<int>(nodes.size()) - 1; }
  // The rule as reports show it: "attention", or "attention+generic" when grown.
  std::string rule_label() const { return grown ? rule + "+generic" : rule; }
  int role_node(MemberRole r) const {  // -1 when the rule matched no node in that role
    auto it = roles.find(r);
    return it == roles.end() ? -1 : it->second;
  }
};

// Why the planner refused a merge. The codes (reason_code_id) are stable: tests, docs and users
// grep for them.
enum class ReasonCode {
  Cycle,           // GAF-NF002 would create a cycle
  PeakMemory,      // GAF-NF003 would raise the predicted peak memory
  Classes,         // GAF-NF004 op classes cannot fuse this way
  DuplicateWork,   // GAF-NF005 would recompute expensive work
  Shapes,          // GAF-NF006 incompatible shapes
  NoFold,          // GAF-NF007 BatchNormalization not foldable into its MatMul/Gemm
  GroupSize,       // GAF-NF010 group too large
  Skipped,         // GAF-NF020 node skipped by the user
  MeasuredSlower,  // GAF-NF030 the group measured slower fused than its members run apart
  Replicated,      // GAF-NF040 tensor parallelism: a MatMul set's region does not split across the ranks
  HasCollectives,  // GAF-NF041 tensor parallelism: the graph has collectives already, not sharded again
};
const char* reason_code_id(ReasonCode c);  // "GAF-NF002"
const char* reason_meaning(ReasonCode c);  // one sentence (docs/USER_GUIDE.md has the same table)
std::vector<ReasonCode> all_reason_codes();

// A legality verdict: allowed, or refused with a code and a sentence naming the nodes.
class MergeDecision {
 public:
  static MergeDecision allow() { return MergeDecision(); }
  static MergeDecision refuse(ReasonCode code, std::string why) { return MergeDecision(code, std::move(why)); }
  bool allowed() const { return !refused_; }
  explicit operator bool() const { return allowed(); }
  ReasonCode code() const { return code_; }  // only when refused
  const std::string& why() const { return why_; }

 private:
  MergeDecision() = default;
  MergeDecision(ReasonCode c, std::string why) : refused_(true), code_(c), why_(std::move(why)) {}
  bool refused_ = false;
  ReasonCode code_ = ReasonCode::Cycle;
  std::string why_;
};

// A merge the planner considered and refused.
struct RefusedMerge {
  ReasonCode code = ReasonCode::Cycle;
  std::string message;             // a sentence naming the nodes
  std::string rule;                // rule or "generic"
  std::vector<std::string> nodes;  // node names involved
};

// One pass the model went through on its way to kernels, and what it did to this model. The
// Engine's passes, in the order it runs them: load (import, dims bound, constants folded, one
// spelling per op), shard (--tp), each enabled rule's graph rewrite (priority order: BatchNorm
// folded, horizontal MatMuls, ...), group, guard (groups measured slower fused planned apart),
// pack (MatMul weights as panels for the tiles).
struct PassRun {
  std::string name;
  std::string did;  // one line: "3 rewrites, 1 refused", "off"
};

struct FusionPlan {
  std::vector<FusionGroup> groups;  // in execution order
  std::vector<RefusedMerge> refused;
  std::vector<int> group_of_node;  // node index -> group id
  // Graph rewrites applied before grouping, one sentence each starting with its verb
  // ("Rewrote horizontal MatMul: ...", "Folded BatchNormalization 'bn' into 'mm' ...").
  std::vector<std::string> rewrites;
  // Nodes a rewrite made -> the source nodes (of the graph as loaded) each one replaces, so every
  // kernel maps back to the model's own nodes.
  std::map<std::string, std::vector<std::string>> source_nodes;
  // The passes that made this plan, in order (plan_fusion_rewriting: the rules' rewrites and
  // grouping; the Engine adds the ones around them).
  std::vector<PassRun> passes;
};

}  // namespace gaf
