#include "fusion/planner/plan.h"

namespace gaf {

namespace {
const struct {
  FusionKind kind;
  const char* name;
} kKinds[] = {{FusionKind::Elementwise, "elementwise"},
              {FusionKind::MatMulEpilogue, "matmul_epilogue"},
              {FusionKind::Normalization, "normalization"},
              {FusionKind::HorizontalMatMul, "horizontal_matmul"},
              {FusionKind::CommCompute, "comm_compute"},
              {FusionKind::Custom, "custom"},
              {FusionKind::Single, "single"}};
}  // namespace

const char* fusion_kind_name(FusionKind k) {
  for (const auto& e : kKinds)
    if (e.kind == k) return e.name;
  return "?";
}

bool parse_fusion_kind(const std::string& s, FusionKind* out) {
  for (const auto& e : kKinds)
    if (s == e.name && e.kind != FusionKind::Single) {
      *out = e.kind;
      return true;
    }
  return false;
}

std::vector<std::string> fusion_kind_names() {
  std::vector<std::string> v;
  for (const auto& e : kKinds)
    if (e.kind != FusionKind::Single) v.push_back(e.name);
  return v;
}

const char* compute_decision_name(ComputeDecision d) {
  switch (d) {
    case ComputeDecision::Inline: return "inline";
    case ComputeDecision::ComputeAt: return "compute_at";
    case ComputeDecision::Root: return "root";
  }
  return "?";
}

const char* member_role_name(MemberRole r) {
  switch (r) {
    case MemberRole::Scores: return "scores";
    case MemberRole::Probabilities: return "probabilities";
    case MemberRole::Context: return "context";
    case MemberRole::Gate: return "gate";
    case MemberRole::Up: return "up";
    case MemberRole::Residual: return "residual";
  }
  return "?";
}

namespace {
const struct {
  ReasonCode code;
  const char* id;
  const char* meaning;
} kReasons[] = {
    {ReasonCode::Cycle, "GAF-NF002", "would create a cycle (a path leaves the group and re-enters it)"},
    {ReasonCode::PeakMemory, "GAF-NF003",
     "would raise the predicted peak memory (values live at once, plus the group's internal buffers)"},
    {ReasonCode::Classes, "GAF-NF004",
     "op classes cannot fuse this way (only elementwise/layout work fuses into another group's prologue or "
     "epilogue)"},
    {ReasonCode::DuplicateWork, "GAF-NF005",
     "would recompute expensive work (an elementwise producer inside a MatMul's reduction loop, or a layout op "
     "that breaks the operand's rows into scattered runs)"},
    {ReasonCode::Shapes, "GAF-NF006",
     "a computed value is broadcast by its consumer; inlined it would be recomputed per output element"},
    {ReasonCode::NoFold, "GAF-NF007",
     "a BatchNormalization cannot be folded into the MatMul/Gemm before it (not inference form, not constant, "
     "or the MatMul's output has other readers)"},
    {ReasonCode::GroupSize, "GAF-NF010", "group too large (--max-group-size)"},
    {ReasonCode::Skipped, "GAF-NF020", "a node is skipped by the user (--skip)"},
    {ReasonCode::MeasuredSlower, "GAF-NF030",
     "the group measured slower fused than its members run apart (gaf run --check-fusion, or gaf-tune's guard "
     "in the schedule database): they run apart"},
    {ReasonCode::Replicated, "GAF-NF040",
     "tensor parallelism (--tp): a MatMul set is left replicated on every rank, its region does not split "
     "across the ranks (the sentence names the node and why)"},
    {ReasonCode::HasCollectives, "GAF-NF041",
     "tensor parallelism (--tp): the graph has collectives already, so every rank runs it as it is"}};
}  // namespace

const char* reason_code_id(ReasonCode c) {
  for (const auto& r : kReasons)
    if (r.code == c) return r.id;
  return "?";
}

const char* reason_meaning(ReasonCode c) {
  for (const auto& r : kReasons)
    if (r.code == c) return r.meaning;
  return "";
}

std::vector<ReasonCode> all_reason_codes() {
  std::vector<ReasonCode> v;
  for (const auto& r : kReasons) v.push_back(r.code);
  return v;
}

}  // namespace gaf
