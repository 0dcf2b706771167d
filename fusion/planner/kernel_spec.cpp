#include "fusion/planner/kernel_spec.h"

#include <algorithm>
#include <map>
#include <set>

#include "fusion/planner/group_info.h"
#include "fusion/planner/layout_chains.h"

namespace gaf {

namespace {

bool has_op(const Graph& g, const FusionGroup& grp, std::initializer_list<const char*> ops) {
  for (int n : grp.nodes)
    for (const char* op : ops)
      if (g.nodes()[n].op_type == op) return true;
  return false;
}

// A Conv with the work fused after it, e.g. "Conv+Add+Relu" (a residual block's end): the
// compute ops in group order, each once; layout ops (a patch embedding's flatten) are not named.
std::string conv_label(const GraphView& v, const FusionGroup& grp) {
  std::string s = "Conv";
  std::set<std::string> named = {"Conv"};
  for (int n : grp.nodes) {
    const OpClass c = v.op_class(n);
    if (c == OpClass::Injective || c == OpClass::Opaque) continue;
    if (named.insert(v.node(n).op_type).second) s += "+" + v.node(n).op_type;
  }
  return s;
}

// The MatMuls a horizontal group replaced: the Slices reading its wide output, the bias Add or,
// when no branch had a bias, the MatMul (horizontal.h), wherever they were grouped.
size_t horizontal_branches(const GraphView& v, const FusionGroup& grp) {
  size_t n = 0;
  for (int i : grp.nodes) {
    if (v.node(i).op_type != "Add" && v.node(i).op_type != "MatMul") continue;
    for (int c : v.consumers(v.node(i).outputs[0]))
      if (v.node(c).op_type == "Slice" && v.node(c).inputs[0] == v.node(i).outputs[0]) ++n;
  }
  return std::max<size_t>(n, 1);
}

// The label of a group whose rule gave none: its hero op and what is fused after it.
std::string derived_label(const GraphView& v, const FusionGroup& grp) {
  const Graph& g = v.graph();
  switch (grp.kind) {
    case FusionKind::HorizontalMatMul:
      return "MatMul x" + std::to_string(horizontal_branches(v, grp)) + " (horizontal)";
    case FusionKind::MatMulEpilogue: {
      std::string s = has_op(g, grp, {"Gemm"}) ? "Gemm" : "MatMul";
      if (has_op(g, grp, {"Softmax"})) return s + "+Softmax";
      // A norm over the MatMul's rows (rule matmul_layernorm): LayerNorm centres them, RMSNorm not.
      if (has_op(g, grp, {"LayerNormalization"}) || (has_op(g, grp, {"ReduceMean"}) && has_op(g, grp, {"Sub"})))
        return s + "+LayerNorm";
      if (has_op(g, grp, {"ReduceMean"})) return s + "+RMSNorm";
      if (has_op(g, grp, {"Gelu", "Erf"})) return s + "+GELU";
      if (has_op(g, grp, {"Relu"})) return s + "+ReLU";
      // GELU's tanh form multiplies around its Tanh (0.5 x (1 + tanh(c (x + 0.044715 x^3)))); a
      // Tanh alone is a pooler's or an RNN's activation.
      if (has_op(g, grp, {"Tanh"})) return s + (has_op(g, grp, {"Pow", "Mul"}) ? "+GELU(tanh)" : "+Tanh");
      if (has_op(g, grp, {"Sigmoid"})) return s + "+Sigmoid";
      if (has_op(g, grp, {"Add", "Mul", "Div"})) return s + "+epilogue";
      return s;
    }
    case FusionKind::Normalization:
      if (has_op(g, grp, {"LayerNormalization"})) return "LayerNorm";
      if (has_op(g, grp, {"BatchNormalization"})) return "BatchNorm";
      if (has_op(g, grp, {"LogSoftmax", "Log"})) return "LogSoftmax";
      if (has_op(g, grp, {"Softmax", "Exp"})) return "Softmax";
      return "reduction";
    case FusionKind::Elementwise: return has_op(g, grp, {"Conv"}) ? conv_label(v, grp) : "elementwise";
    case FusionKind::Custom: return grp.rule;
    case FusionKind::Single: return v.node(grp.nodes.front()).op_type;
    default: return fusion_kind_name(grp.kind);
  }
}

}  // namespace

KernelSpec describe_kernel(const GraphView& v, const FusionGroup& grp) {
  const Graph& g = v.graph();
  KernelSpec spec;
  spec.label = grp.kernel.label.empty() ? derived_label(v, grp) : grp.kernel.label;
  std::set<std::string> inputs(grp.inputs.begin(), grp.inputs.end());
  std::set<std::string> moved;           // in-group values whose innermost axis a Transpose moved
  std::map<std::string, int> member_of;  // in-group value -> the member producing it
  const std::string anchor = grp.outputs.size() == 1 ? grp.outputs[0] : "";
  for (size_t pos = 0; pos < grp.nodes.size(); ++pos) {
    const int idx = grp.nodes[pos];
    const Node& n = v.node(idx);
    const OpClass cls = v.op_class(idx);
    MemberSpec m;
    for (const auto& [role, node] : grp.roles)
      if (node == idx) m.role = role;
    m.layout = cls == OpClass::Injective || cls == OpClass::Opaque;
    auto rank = [&](size_t i) {
      return i < n.inputs.size() && !n.inputs[i].empty() ? g.value(n.inputs[i]).type.dims.size() : 0;
    };
    // Gemm's operands are 2-D by definition, so both ranks >= 2 covers it.
    m.tiled_matmul = cls == OpClass::MatMul && rank(0) >= 2 && rank(1) >= 2;
    m.tiled_conv = n.op_type == "Conv";
    if (n.op_type == "Transpose") m.transpose_dim = transpose_innermost_dim(g, n);
    bool moves = m.transpose_dim > 0;  // and layout ops after it keep it moved
    for (const std::string& in : n.inputs) moves = moves || (m.layout && moved.count(in));
    if (moves)
      for (const std::string& o : n.outputs) moved.insert(o);
    if (m.tiled_matmul) {
      m.stage_a = !inputs.count(n.inputs[0]);  // computed by a member, not a group input
      auto a = member_of.find(n.inputs[0]);
      if (a != member_of.end()) m.a_member = a->second;
      m.stage_b = moved.count(n.inputs[1]) > 0;
      if (!anchor.empty()) m.layout_run = static_cast<int>(layout_epilogue_run(g, grp.nodes, pos, anchor));
      m.b_constant = g.value(n.inputs[1]).constant.has_value();
    }
    for (const std::string& o : n.outputs)
      if (!o.empty()) member_of[o] = static_cast<int>(pos);
    spec.members.push_back(m);
  }
  return spec;
}

}  // namespace gaf
