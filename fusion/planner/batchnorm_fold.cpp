// Built-in rule `batchnorm_fold` (kind matmul_epilogue): a graph rewrite, no grouping of its own.
//
// Inference BatchNormalization is y = (x - mean) * s + beta per channel c, s = scale / sqrt(var +
// eps), and ONNX puts the channel on axis 1. When x is the 2-D output [N, C] of a MatMul or Gemm,
// axis 1 is the output column, so with constant weights and statistics the whole BN folds into
// the weights once, at load:
//   W'[k, c] = W[k, c] * s[c]   (Gemm transB: W'[c, k] = W[c, k] * s[c])
//   bias'[c] = (beta_gemm * C[c] - mean[c]) * s[c] + beta[c]    (C = 0 for MatMul or Gemm without C)
// and MatMul/Gemm -> BN becomes MatMul/Gemm(W') -> Add(bias'), which the matmul_epilogue rule
// groups (with a following activation). On any other rank the channel axis is not the column
// axis (e.g. [B, S, C]: axis 1 is S), so a per-channel scale is no per-column scale of W.
// After a Conv, axis 1 is always its output channel o:
//   W'[o, ...] = W[o, ...] * s[o],   B'[o] = (B[o] - mean[o]) * s[o] + beta[o]   (B = 0 if absent)
// and Conv -> BN becomes one Conv(W', B'), which groups with its activation like any Conv.
// Refusals (GAF-NF007) name both nodes and the failed condition; BN then stays as it was.
#include <cmath>

#include "fusion/planner/graph_rewrite.h"
#include "fusion/planner/planner.h"
#include "fusion/planner/rules.h"

namespace gaf {

namespace {

const char* const kRuleName = "batchnorm_fold";
const char* const kStatNames[] = {"X", "scale", "B", "input_mean", "input_var"};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

bool is_float_matrix(const Tensor* t) { return t && t->dtype() == DType::Float32 && t->rank() == 2; }

// Why BatchNormalization `bn` reading the output of `mm` (a MatMul, Gemm or Conv) cannot be folded
// into it; empty when it can.
std::string why_not(const GraphView& v, const Node& bn, const Node& mm) {
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (!bn.outputs[i].empty()) return "it outputs running statistics (training mode)";
  if (bn.attrs.get_int("training_mode", 0) != 0) return "it runs in training mode (batch statistics)";
  for (int i = 1; i < 5; ++i)
    if (!v.constant(bn.inputs[i]))
      return std::string("its ") + kStatNames[i] + " " + quoted(bn.inputs[i]) + " is not a constant";
  const Tensor* w = v.constant(mm.inputs[1]);
  if (!w) return "the weight " + quoted(mm.inputs[1]) + " of " + quoted(mm.name) + " is not a constant";
  const bool conv = mm.op_type == "Conv";
  if (conv && (w->dtype() != DType::Float32 || w->rank() < 3))
    return "the weight " + quoted(mm.inputs[1]) + " of " + quoted(mm.name) + " is not a float32 [O, C, k...] kernel";
  if (!conv && !is_float_matrix(w))
    return "the weight " + quoted(mm.inputs[1]) + " of " + quoted(mm.name) + " is not a 2-D float32 matrix";
  if (mm.inputs.size() > 2 && !mm.inputs[2].empty() && !v.constant(mm.inputs[2]))
    return "the bias C " + quoted(mm.inputs[2]) + " of " + quoted(mm.name) + " is not a constant";
  const std::string& x = mm.outputs[0];
  if (v.is_graph_output(x)) return quoted(x) + " is also a graph output (it must keep its unnormalised value)";
  for (int c : v.consumers(x))
    if (v.node(c).name != bn.name)
      return quoted(x) + " is also read by " + quoted(v.node(c).name) + " (it must keep its unnormalised value)";
  const TensorType& t = v.graph().value(x).type;
  if (!conv && t.shape().size() != 2)
    return "it normalises over axis 1 of " + quoted(x) + " " + t.str() + ", but " + quoted(mm.name) +
           "'s weight columns are axis " + std::to_string(t.shape().size() - 1) +
           ", so its per-channel scale is not a per-column scale of the weight";
  return "";
}

// BN's per-channel scale s = scale / sqrt(var + eps).
std::vector<double> bn_scales(const GraphView& v, const Node& bn) {
  const Tensor &scale = *v.constant(bn.inputs[1]), &var = *v.constant(bn.inputs[4]);
  const double eps = bn.attrs.get_float("epsilon", 1e-5f);
  std::vector<double> s(scale.numel());
  for (size_t c = 0; c < s.size(); ++c) s[c] = scale.as_double(c) / std::sqrt(var.as_double(c) + eps);
  return s;
}

// The folded weight and bias for BN `bn` after `mm`, as new initializers; returns their names.
std::pair<std::string, std::string> folded_constants(Graph& g, const GraphView& v, const Node& bn, const Node& mm) {
  const Tensor &beta = *v.constant(bn.inputs[2]), &mean = *v.constant(bn.inputs[3]);
  const std::vector<double> s = bn_scales(v, bn);
  const int64_t C = static_cast<int64_t>(s.size());

  const Tensor& w = *v.constant(mm.inputs[1]);
  const bool gemm = mm.op_type == "Gemm";
  const bool trans_b = gemm && mm.attrs.get_int("transB", 0) != 0;  // W is [C, K], else [K, C]
  Tensor wf(DType::Float32, w.shape());
  for (int64_t r = 0; r < w.shape()[0]; ++r)
    for (int64_t k = 0; k < w.shape()[1]; ++k) {
      int64_t i = r * w.shape()[1] + k;
      wf.data<float>()[i] = static_cast<float>(w.as_double(i) * s[trans_b ? r : k]);
    }

  // Gemm's C broadcasts to [M, C]; a per-row C ([M, 1] or [M, C]) keeps its rows in bias'.
  const Tensor* cten = gemm && mm.inputs.size() > 2 && !mm.inputs[2].empty() ? v.constant(mm.inputs[2]) : nullptr;
  const double beta_gemm = gemm ? mm.attrs.get_float("beta", 1.0f) : 0.0;
  Shape cshape = cten ? cten->shape() : Shape{};
  while (cshape.size() < 2) cshape.insert(cshape.begin(), 1);
  const int64_t rows = cshape[0];
  Tensor bias(DType::Float32, rows == 1 ? Shape{C} : Shape{rows, C});
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double cv = cten ? beta_gemm * cten->as_double(m * cshape[1] + (cshape[1] == 1 ? 0 : c)) : 0.0;
      bias.data<float>()[m * C + c] = static_cast<float>((cv - mean.as_double(c)) * s[c] + beta.as_double(c));
    }

  std::string wname = g.fresh_name(mm.inputs[1] + "_bn_folded"), bname = g.fresh_name(bn.name + "_folded_bias");
  g.add_initializer(wname, std::move(wf));
  g.add_initializer(bname, std::move(bias));
  return {wname, bname};
}

// The folded kernel and bias for BN `bn` after Conv `conv`, as new initializers; returns their names.
std::pair<std::string, std::string> folded_conv_constants(Graph& g, const GraphView& v, const Node& bn,
                                                          const Node& conv) {
  const std::vector<double> s = bn_scales(v, bn);
  const Tensor &beta = *v.constant(bn.inputs[2]), &mean = *v.constant(bn.inputs[3]);
  const Tensor& w = *v.constant(conv.inputs[1]);
  const int64_t O = w.shape()[0], per_output = w.numel() / std::max<int64_t>(O, 1);
  Tensor wf(DType::Float32, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i) wf.data<float>()[i] = static_cast<float>(w.as_double(i) * s[i / per_output]);
  const Tensor* b = conv.inputs.size() > 2 && !conv.inputs[2].empty() ? v.constant(conv.inputs[2]) : nullptr;
  Tensor bias(DType::Float32, {O});
  for (int64_t o = 0; o < O; ++o)
    bias.data<float>()[o] =
        static_cast<float>(((b ? b->as_double(o) : 0.0) - mean.as_double(o)) * s[o] + beta.as_double(o));
  std::string wname = g.fresh_name(conv.inputs[1] + "_bn_folded"), bname = g.fresh_name(bn.name + "_folded_bias");
  g.add_initializer(wname, std::move(wf));
  g.add_initializer(bname, std::move(bias));
  return {wname, bname};
}

class BatchNormFoldRule : public FusionRule {
 public:
  // Before horizontal MatMul, so a folded MatMul + bias can still join its siblings.
  BatchNormFoldRule() : FusionRule(kRuleName, FusionKind::MatMulEpilogue, rule_priority::kMatMulEpilogue + 20) {}

  // The rewrite's result is grouped by the matmul_epilogue rule; this rule forms no group itself.
  std::vector<RuleMatch> find(const GraphView&, const std::function<bool(int)>&) const override { return {}; }
  std::string describe() const override {
    return name() + ": MatMul|Gemm|Conv -> BatchNormalization folded into the weights (rewrite)";
  }

  void rewrite(Graph& g, const std::function<bool(const Node&)>& skipped, RewriteLog& log) const override {
    GraphView v(g);
    std::set<int> removed;
    std::vector<Node> added;
    for (int b = 0; b < v.num_nodes(); ++b) {
      const Node& bn = v.node(b);
      if (bn.op_type != "BatchNormalization") continue;
      int p = v.producer(bn.inputs[0]);
      if (p < 0 || (v.node(p).op_type != "MatMul" && v.node(p).op_type != "Gemm" && v.node(p).op_type != "Conv"))
        continue;
      const Node& mm = v.node(p);
      const bool skip = skipped(bn) || skipped(mm);
      std::string why =
          skip ? "node " + quoted(skipped(bn) ? bn.name : mm.name) + " is skipped by the user" : why_not(v, bn, mm);
      if (!why.empty()) {
        log.refused.push_back(RefusedMerge{skip ? reason::kSkipped : reason::kNoFold,
                                           "cannot fold BatchNormalization " + quoted(bn.name) + " into " +
                                               quoted(mm.name) + ": " + why +
                                               "; it stays a BatchNormalization (normalization group)",
                                           kRuleName,
                                           {mm.name, bn.name}});
        continue;
      }
      removed.insert({p, b});
      log.applied.push_back("Folded BatchNormalization " + quoted(bn.name) + " into " + quoted(mm.name));
      if (mm.op_type == "Conv") {  // the bias goes into the Conv itself
        auto [wname, bname] = folded_conv_constants(g, v, bn, mm);
        added.push_back(Node{mm.name, mm.op_type, mm.attrs, {mm.inputs[0], wname, bname}, {bn.outputs[0]}});
        continue;
      }
      auto [wname, bname] = folded_constants(g, v, bn, mm);
      Node folded{mm.name, mm.op_type, {}, {mm.inputs[0], wname}, {mm.outputs[0]}};
      for (const auto& [key, value] : mm.attrs.all())
        if (key != "beta") folded.attrs.set(key, value);  // Gemm's C moved into bias'
      added.push_back(std::move(folded));
      added.push_back(Node{bn.name + "/folded_bias", "Add", {}, {mm.outputs[0], bname}, {bn.outputs[0]}});
      if (bn.attrs.has("_opset")) added.back().attrs.set("_opset", bn.attrs.all().at("_opset"));
    }
    if (!removed.empty()) replace_nodes(g, removed, std::move(added));
  }
};

}  // namespace

std::shared_ptr<const FusionRule> make_batchnorm_fold_rule() { return std::make_shared<BatchNormFoldRule>(); }

}  // namespace gaf
