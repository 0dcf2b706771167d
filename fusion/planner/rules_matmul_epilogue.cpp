// Built-in rule 2: MatMul/Gemm with its epilogue — bias add, activation (single op or PyTorch's
// decomposed GELU), scale, residual add — applied on the accumulator before the single store.
#include "fusion/planner/layout_chains.h"
#include "fusion/planner/rule_patterns.h"
#include "fusion/planner/rules.h"

namespace gaf {

std::shared_ptr<const FusionRule> make_matmul_epilogue_rule() {
  using patterns::activation;
  Pattern mm = Pattern("MatMul") | Pattern("Gemm");
  Pattern bias = Pattern("Add").with_const();
  Pattern scale = Pattern("Mul").with_const() | Pattern("Div").with_const();
  Pattern residual = Pattern("Add");
  Pattern p = (mm >> bias >> activation(2) >> residual) | (mm >> bias >> activation(2)) | (mm >> bias >> residual) |
              (mm >> bias) | (mm >> activation(1)) | (mm >> scale >> residual) | (mm >> scale);
  return std::make_shared<PatternRule>("matmul_epilogue", FusionKind::MatMulEpilogue, rule_priority::kMatMulEpilogue,
                                       p);
}

namespace {

// Softmax over the last axis (the MatMul's columns), so one output row needs one row of scores.
Pattern::Predicate softmax_over_last_axis() {
  return [](const GraphView& g, int node, const PatternMatch&) {
    const Node& n = g.node(node);
    int64_t rank = static_cast<int64_t>(g.graph().value(n.inputs[0]).type.dims.size());
    int64_t axis = n.attrs.get_int("axis", n.attrs.get_int("_opset", 13) >= 13 ? -1 : 1);  // default changed at 13
    return axis == -1 || axis == rank - 1;
  };
}

}  // namespace

std::shared_ptr<const FusionRule> make_attention_scores_rule() {
  // Attention's scores: Q x K^T, scaled, masked, normalised by Softmax along each row. Fused, a
  // row block of scores is computed, normalised and stored once (never written unnormalised).
  Pattern mm = Pattern("MatMul");
  Pattern scale = Pattern("Mul").with_const() | Pattern("Div").with_const();
  Pattern mask = patterns::attention_masks();
  Pattern softmax = Pattern("Softmax").where(softmax_over_last_axis());
  Pattern p = (mm >> scale >> mask >> softmax) | (mm >> scale >> softmax) | (mm >> mask >> softmax) | (mm >> softmax);
  return std::make_shared<PatternRule>("attention_scores", FusionKind::MatMulEpilogue,
                                       rule_priority::kNormalization + 50, p);
}

std::shared_ptr<const FusionRule> make_attention_rule() {
  // Attention whole: the scores rule's chain, then probs x V with the probabilities as A. Fused,
  // each head's rows are computed in blocks — scores, Softmax, then the block's probs x V — so
  // neither scores nor probabilities are written (BERT at seq 512: 12.6 MB per layer).
  Pattern mm = Pattern("MatMul");
  mm.as(MemberRole::Scores);
  Pattern scale = Pattern("Mul").with_const() | Pattern("Div").with_const();
  Pattern mask = patterns::attention_masks();
  Pattern softmax = Pattern("Softmax").where(softmax_over_last_axis());
  softmax.as(MemberRole::Probabilities);
  Pattern pv = Pattern("MatMul").where([](const GraphView& g, int node, const PatternMatch& so_far) {
    return g.node(node).inputs[0] == g.node(so_far.nodes.back()).outputs[0];  // probabilities as A
  });
  pv.as(MemberRole::Context);
  Pattern p = (mm >> scale >> mask >> softmax >> pv) | (mm >> scale >> softmax >> pv) | (mm >> mask >> softmax >> pv) |
              (mm >> softmax >> pv);
  auto rule =
      std::make_shared<PatternRule>("attention", FusionKind::MatMulEpilogue, rule_priority::kNormalization + 60, p);
  rule->set_kernel_label("Attention");
  return rule;
}

std::shared_ptr<const FusionRule> make_matmul_layernorm_rule() {
  // A projection, its optional bias, the residual Add, then a norm over the rows it produces:
  // BERT's post-norm attention output and FFN2, and in a pre-norm block (GPT-2, Llama, ViT, T5)
  // the out-projection or FFN2 with the next sublayer's norm. Fused, one kernel writes the rows
  // normalised (the norm is not a kernel of its own). In a pre-norm block the residual sum is also
  // read after the group (the next residual Add): it leaves the group as a second output, the only
  // value that may; everything else the chain computes is read inside it.
  Pattern mm = Pattern("MatMul") | Pattern("Gemm");
  Pattern bias = Pattern("Add").with_const();
  Pattern residual = Pattern("Add");
  residual.as(MemberRole::Residual).may_leave();
  Pattern layernorm_op = Pattern("LayerNormalization").where([](const GraphView& g, int node, const PatternMatch&) {
    const Node& n = g.node(node);
    int64_t rank = static_cast<int64_t>(g.graph().value(n.inputs[0]).type.dims.size());
    int64_t axis = n.attrs.get_int("axis", -1);
    return axis == -1 || axis == rank - 1;  // normalised over the MatMul's columns only
  });
  // nn.MultiheadAttention's out_proj runs on [seq * batch, hidden] rows, reshaped to [seq, batch,
  // hidden] and transposed to [batch, seq, hidden] before the residual Add: layout ops that move
  // whole rows (the last axis stays last, whole), so the norm still reads rows of the product.
  Pattern rows_reshape = Pattern("Reshape").where([](const GraphView& g, int node, const PatternMatch&) {
    const Node& n = g.node(node);
    const TensorType &in = g.graph().value(n.inputs[0]).type, &out = g.graph().value(n.outputs[0]).type;
    return in.is_static() && out.is_static() && !in.dims.empty() && !out.dims.empty() &&
           in.dims.back().value == out.dims.back().value;
  });
  Pattern rows_transpose = Pattern("Transpose").where([](const GraphView& g, int node, const PatternMatch&) {
    return transpose_innermost_dim(g.graph(), g.node(node)) == 0;  // after rows_reshape: static
  });
  Pattern p = (mm >> bias >> residual >> patterns::layernorm_decomposed(3)) | (mm >> bias >> residual >> layernorm_op) |
              (mm >> bias >> residual >> patterns::rmsnorm_decomposed(3)) |
              (mm >> residual >> patterns::layernorm_decomposed(2)) | (mm >> residual >> layernorm_op) |
              (mm >> residual >> patterns::rmsnorm_decomposed(2)) |
              (mm >> bias >> rows_reshape >> rows_transpose >> residual >> layernorm_op) |
              (mm >> bias >> rows_reshape >> rows_transpose >> residual >> patterns::layernorm_decomposed(5));
  // No fixed kernel label: KernelSpec::label says MatMul+LayerNorm or MatMul+RMSNorm from the ops.
  return std::make_shared<PatternRule>("matmul_layernorm", FusionKind::MatMulEpilogue,
                                       rule_priority::kNormalization + 50, p);
}

}  // namespace gaf
