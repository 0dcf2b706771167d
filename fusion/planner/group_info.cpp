#include "fusion/planner/group_info.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "fusion/planner/layout_chains.h"

namespace gaf {

int64_t value_bytes(const Graph& g, const std::string& value) {
  const TensorType& t = g.value(value).type;
  return shape_numel(t.shape()) * static_cast<int64_t>(dtype_size(t.dtype));
}

namespace {

// Signature: kind, then per member its op, attributes and where each input comes from (external
// input #k with its type, or member j's output o), value-input constants by content, and which
// member outputs leave the group. Weights are external inputs, so BERT's 12 layers share one.
std::string signature_of(const GraphView& v, const FusionGroup& fg) {
  const Graph& g = v.graph();
  std::map<std::string, std::string> ref;
  for (size_t k = 0; k < fg.inputs.size(); ++k) ref[fg.inputs[k]] = "i" + std::to_string(k);
  std::ostringstream os;
  os << fusion_kind_name(fg.kind);
  // Custom groups may carry their own algorithm (a generate step keyed by the rule name).
  if (fg.kind == FusionKind::Custom) os << ':' << fg.rule;
  os << '{';
  for (size_t j = 0; j < fg.nodes.size(); ++j) {
    const Node& n = v.node(fg.nodes[j]);
    const OpSchema* schema = OpRegistry::global().find(n.op_type);
    os << n.op_type << '[' << n.attrs.fingerprint() << "](";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty()) {
        os << "_,";
        continue;
      }
      auto it = ref.find(in);
      os << (it != ref.end() ? it->second : "?");
      const Value& val = g.value(in);
      // Concrete type only: a symbol's name (batch=1) must not split otherwise equal kernels.
      // With dynamic dims, the dims' expressions ([1,seq,768] and [1,512,768] differ).
      os << ':' << dtype_name(val.type.dtype)
         << (val.sym_dims.empty() ? shape_str(val.type.shape()) : sym_shape_str(val.sym_dims));
      if (val.constant && schema && schema->is_value_input(static_cast<int>(i))) {
        os << '=';
        if (!val.sym_contents.empty())
          for (const SymExpr& e : val.sym_contents) os << e.str() << ' ';
        else
          for (int64_t e = 0; e < val.constant->numel(); ++e) os << val.constant->as_double(e) << ' ';
      }
      os << ',';
    }
    os << ")->";
    for (size_t o = 0; o < n.outputs.size(); ++o) ref[n.outputs[o]] = "m" + std::to_string(j) + "." + std::to_string(o);
    os << ';';
  }
  os << "}out(";
  for (const std::string& o : fg.outputs) os << ref[o] << ',';
  os << ')';
  return os.str();
}

// The one output of a group with several that no member reads, or "" if there is not exactly one.
std::string sink_output(const GraphView& v, const std::vector<int>& nodes, const std::vector<std::string>& outputs) {
  std::set<std::string> read;
  for (int n : nodes)
    for (const std::string& in : v.node(n).inputs) read.insert(in);
  std::string sink;
  for (const std::string& o : outputs) {
    if (read.count(o)) continue;
    if (!sink.empty()) return "";
    sink = o;
  }
  return sink;
}

// With several outputs, the one a MatMul's value reaches through elementwise nodes alone, each
// the only reader of the one before (a pre-norm block's bias and residual Add up to the residual
// sum): its tiles can carry the MatMul. -1 if there is none.
int tile_carrier(const GraphView& v, const std::vector<int>& nodes, int matmul,
                 const std::vector<std::string>& outputs) {
  std::set<int> inside(nodes.begin(), nodes.end());
  std::string cur = v.node(matmul).outputs[0];
  for (;;) {
    auto out = std::find(outputs.begin(), outputs.end(), cur);
    if (out != outputs.end()) return static_cast<int>(out - outputs.begin());
    int next = -1;
    for (int c : v.consumers(cur)) {
      if (!inside.count(c) || next >= 0) return -1;
      next = c;
    }
    if (next < 0) return -1;
    const OpClass cls = v.op_class(next);
    if (cls != OpClass::Elementwise && cls != OpClass::Broadcast) return -1;
    cur = v.node(next).outputs[0];
  }
}

bool reaches_other_output(const std::set<std::string>& downstream, const std::vector<std::string>& outputs,
                          const std::string& sink) {
  for (const std::string& o : outputs)
    if (o != sink && downstream.count(o)) return true;
  return false;
}

}  // namespace

std::vector<FuncDecision> member_decisions(const GraphView& v, const std::vector<int>& nodes,
                                           const std::vector<std::string>& outputs) {
  std::vector<FuncDecision> decisions;
  const std::string anchor = outputs.size() == 1 ? outputs[0] : "";
  // With several outputs, the one no member reads (a pre-norm block's normalised rows beside the
  // residual sum it reads): a row statistic that feeds only it is computed per row of it.
  const std::string sink = anchor.empty() ? sink_output(v, nodes, outputs) : "";
  // The layout epilogue of the MatMul that ends the group (probs x V's Transpose + Reshape): it
  // keeps that MatMul's rows, so members feeding its A rows keep theirs too.
  std::set<int> row_keeping_layout;
  std::set<size_t> carried;  // positions of MatMuls whose tiles the output carries through it
  for (size_t pos = 0; pos < nodes.size() && !anchor.empty(); ++pos)
    if (v.op_class(nodes[pos]) == OpClass::MatMul && layout_epilogue_run(v.graph(), nodes, pos, anchor) > 0) {
      carried.insert(pos);
      row_keeping_layout.insert(nodes.begin() + pos + 1, nodes.end());
    }
  for (size_t pos = 0; pos < nodes.size(); ++pos) {
    int n = nodes[pos];
    const Node& node = v.node(n);
    OpClass cls = v.op_class(n);
    // A layout op downstream of this member means an output row is not a row of this member
    // (Halide's bounds are boxes: a Transpose would make one output row need many of its rows);
    // so does reaching a MatMul as its B. Layout ops elsewhere in the group (another operand's
    // prologue) and a row-keeping layout epilogue do not count.
    std::string layout_after;
    std::set<std::string> downstream(node.outputs.begin(), node.outputs.end());
    for (size_t q = pos + 1; q < nodes.size() && layout_after.empty(); ++q) {
      const Node& later = v.node(nodes[q]);
      bool reads = false;
      for (const std::string& in : later.inputs) reads = reads || downstream.count(in);
      if (!reads) continue;
      const bool as_b_only = v.op_class(nodes[q]) == OpClass::MatMul && !downstream.count(later.inputs[0]);
      downstream.insert(later.outputs.begin(), later.outputs.end());
      if (v.op_class(nodes[q]) == OpClass::Injective && !row_keeping_layout.count(nodes[q]))
        layout_after = "layout op '" + later.name + "' lies between it and the output";
      else if (as_b_only)
        layout_after = "MatMul '" + later.name + "' reads it as B";
    }
    for (const std::string& o : node.outputs) {
      if (o.empty()) continue;
      FuncDecision d;
      d.value = o;
      if (std::find(outputs.begin(), outputs.end(), o) != outputs.end()) {
        d.decision = ComputeDecision::Root;
        d.reason = v.is_graph_output(o) ? "graph output" : "read outside the group";
      } else if (is_map_class(cls)) {
        d.decision = ComputeDecision::Inline;
        d.reason = std::string(op_class_name(cls)) + ": computed where it is read";
      } else if (carried.count(pos)) {
        d.decision = ComputeDecision::ComputeAt;
        d.at = anchor + "@tile";
        d.reason = "accumulator computed per tile of the output, stored through the layout ops after it";
      } else if (!layout_after.empty()) {
        d.decision = ComputeDecision::Root;
        d.reason = layout_after + ", so output rows are not its rows";
      } else if (!anchor.empty()) {
        d.decision = ComputeDecision::ComputeAt;
        d.at = anchor + "@row";
        d.at_output = 0;
        d.reason = cls == OpClass::MatMul ? "accumulator computed per row tile of the output"
                                          : "row statistic computed once per output row";
      } else if (const int carrier = cls == OpClass::MatMul ? tile_carrier(v, nodes, n, outputs) : -1; carrier >= 0) {
        d.decision = ComputeDecision::ComputeAt;
        d.at = outputs[static_cast<size_t>(carrier)] + "@tile";
        d.at_output = carrier;
        d.reason = "accumulator computed per tile of the output its elementwise epilogue ends in";
      } else if (!sink.empty() && cls == OpClass::Reduction && !reaches_other_output(downstream, outputs, sink)) {
        d.decision = ComputeDecision::ComputeAt;
        d.at = sink + "@row";
        d.at_output = static_cast<int>(std::find(outputs.begin(), outputs.end(), sink) - outputs.begin());
        d.reason = "row statistic computed once per row of the group's last output, the only one it feeds";
      } else {
        d.decision = ComputeDecision::Root;
        d.reason = "the group has several outputs, so there is no single loop to compute it in";
      }
      decisions.push_back(d);
    }
  }
  return decisions;
}

bool escapes(const GraphView& v, const std::set<int>& inside, const std::string& value) {
  if (v.is_graph_output(value)) return true;
  for (int c : v.consumers(value))
    if (!inside.count(c)) return true;
  return false;
}

int64_t internal_root_bytes(const GraphView& v, std::vector<int> nodes) {
  std::sort(nodes.begin(), nodes.end(), [&](int a, int b) { return v.topo_position(a) < v.topo_position(b); });
  std::set<int> inside(nodes.begin(), nodes.end());
  std::vector<std::string> outputs;
  for (int n : nodes)
    for (const std::string& o : v.node(n).outputs)
      if (!o.empty() && escapes(v, inside, o)) outputs.push_back(o);
  int64_t bytes = 0;
  for (const FuncDecision& d : member_decisions(v, nodes, outputs))
    if (d.decision == ComputeDecision::Root && std::find(outputs.begin(), outputs.end(), d.value) == outputs.end())
      bytes += value_bytes(v.graph(), d.value);
  return bytes;
}

void describe_group(const GraphView& v, FusionGroup& fg) {
  const Graph& g = v.graph();
  std::set<int> inside(fg.nodes.begin(), fg.nodes.end());
  std::set<std::string> produced, seen_in;
  fg.inputs.clear();
  fg.outputs.clear();
  fg.decisions.clear();
  fg.bytes_unfused = 0;
  for (int n : fg.nodes) {
    const Node& node = v.node(n);
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      fg.bytes_unfused += value_bytes(g, in);
      if (!produced.count(in) && seen_in.insert(in).second) fg.inputs.push_back(in);
    }
    for (const std::string& o : node.outputs) {
      if (o.empty()) continue;
      produced.insert(o);
      fg.bytes_unfused += value_bytes(g, o);
      if (escapes(v, inside, o)) fg.outputs.push_back(o);
    }
  }
  fg.bytes_fused = 0;
  for (const std::string& in : fg.inputs) fg.bytes_fused += value_bytes(g, in);
  for (const std::string& o : fg.outputs) fg.bytes_fused += value_bytes(g, o);

  fg.decisions = member_decisions(v, fg.nodes, fg.outputs);
  fg.signature = signature_of(v, fg);
  fg.kernel = describe_kernel(v, fg);
}

}  // namespace gaf
