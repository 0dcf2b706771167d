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

}  // namespace gaf
