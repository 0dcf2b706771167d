#include "fusion/planner/horizontal.h"

#include <cstring>
#include <map>
#include <set>

#include "fusion/ops/registry.h"
#include "fusion/planner/graph_rewrite.h"
#include "fusion/planner/pattern.h"
#include "fusion/planner/rules.h"

namespace gaf {

namespace {

// A MatMul(A, W) with W constant [K, N]: with a bias when its only reader is Add(., bias) with
// bias constant [N] (`add` >= 0), bias-free otherwise (Llama's Q/K/V and gate/up projections).
// `out` is the value the branch's consumers read.
struct Branch {
  int matmul, add;
  std::string weight, bias, out;
};

bool branch_of(const Graph& g, const GraphView& v, int mm, Branch* b) {
  const Node& n = g.nodes()[mm];
  if (n.op_type != "MatMul" || n.inputs.size() != 2) return false;
  // A MatMul a frontend marked (its weights quantized by the model, `_int8_weights`) keeps its
  // own weights: concatenated, the mark would be lost.
  if (n.attrs.has("_int8_weights")) return false;
  const Tensor* w = v.constant(n.inputs[1]);
  if (!w || w->rank() != 2 || w->dtype() != DType::Float32) return false;
  if (v.is_graph_output(n.outputs[0])) return false;
  *b = Branch{mm, -1, n.inputs[1], "", n.outputs[0]};
  const auto& cons = v.consumers(n.outputs[0]);
  if (cons.size() != 1 || g.nodes()[cons[0]].op_type != "Add") return true;
  const Node& add = g.nodes()[cons[0]];
  std::string bias = add.inputs[0] == n.outputs[0] ? add.inputs[1] : add.inputs[0];
  const Tensor* t = v.constant(bias);
  if (!t || t->rank() != 1 || t->shape()[0] != w->shape()[1] || t->dtype() != DType::Float32) return true;
  *b = Branch{mm, cons[0], n.inputs[1], bias, add.outputs[0]};
  return true;
}

// Concatenates [K, N_i] matrices along columns (or [N_i] vectors) when the result is first read
// (Tensor::deferred: planning reads no weights); the parts are kept until then.
Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  int64_t rows = parts[0]->rank() == 2 ? parts[0]->shape()[0] : 1, cols = 0;
  std::vector<Tensor> kept;
  for (const Tensor* p : parts) {
    cols += p->shape().back();
    kept.push_back(*p);  // shares the part's bytes (or its deferred fill)
  }
  Shape shape = parts[0]->rank() == 2 ? Shape{rows, cols} : Shape{cols};
  return Tensor::deferred(DType::Float32, shape, [kept, rows, cols](Tensor& out) {
    int64_t off = 0;
    for (const Tensor& p : kept) {
      int64_t n = p.shape().back();
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(out.data<float>() + r * cols + off, p.data<float>() + r * n, n * sizeof(float));
      off += n;
    }
  });
}

// The MatMuls of gated MLPs (act(x W_gate) * (x W_up)): the gated_mlp rule computes both per
// panel of output columns and writes only their product, which a wide MatMul would not (its
// epilogue reads columns j and j + FFN, so the whole wide row is stored first).
std::set<int> gated_matmuls(const GraphView& v) {
  std::set<int> out;
  for (const RuleMatch& m : make_gated_mlp_rule()->find(v, [](int) { return true; }))
    for (MemberRole role : {MemberRole::Gate, MemberRole::Up}) out.insert(m.roles.at(role));
  return out;
}

}  // namespace

std::vector<std::string> fuse_horizontal_matmuls(Graph& g, const std::function<bool(const Node&)>& skipped,
                                                 std::map<std::string, std::vector<std::string>>* replaced) {
  std::vector<std::string> done;
  GraphView v(g);
  std::map<std::string, std::vector<Branch>> by_input;  // activation -> branches (graph order)
  std::vector<std::string> activations;                 // by_input's keys in graph order
  const std::set<int> gated = gated_matmuls(v);
  for (int i : v.topo_order()) {
    Branch b;
    if (!gated.count(i) && branch_of(g, v, i, &b) && !skipped(v.node(b.matmul)) &&
        (b.add < 0 || !skipped(v.node(b.add)))) {
      const std::string& a = v.node(i).inputs[0];
      if (!by_input.count(a)) activations.push_back(a);
      const auto& first = by_input[a];
      int64_t k = v.constant(b.weight)->shape()[0];
      if (first.empty() || v.constant(first[0].weight)->shape()[0] == k) by_input[a].push_back(b);
    }
  }
  std::set<int> removed;
  std::vector<Node> added;
  for (const std::string& a : activations) {  // graph order: the log lines read layer by layer
    const std::vector<Branch>& branches = by_input[a];
    if (branches.size() < 2 || v.constant(a)) continue;
    std::vector<const Tensor*> ws, bs;
    std::vector<Tensor> zero_biases;  // a bias-free branch among biased ones adds zeros
    zero_biases.reserve(branches.size());
    std::vector<int64_t> splits;
    std::string names;
    bool biased = false;
    for (const Branch& b : branches) biased = biased || b.add >= 0;
    for (const Branch& b : branches) {
      ws.push_back(v.constant(b.weight));
      splits.push_back(ws.back()->shape()[1]);
      if (b.add >= 0) {
        bs.push_back(v.constant(b.bias));
        removed.insert(b.add);
      } else if (biased) {
        bs.push_back(&zero_biases.emplace_back(DType::Float32, Shape{splits.back()}));
      }
      removed.insert(b.matmul);
      names += (names.empty() ? "'" : ", '") + v.node(b.matmul).name + "'";
    }
    std::string base = v.node(branches[0].matmul).name + "/horizontal";
    std::string w = g.fresh_name(base + "_weight"), bias = g.fresh_name(base + "_bias"),
                mm = g.fresh_name(base + "_mm"), add = g.fresh_name(base + "_add"), axes = g.fresh_name(base + "_axes");
    g.add_initializer(w, concat_columns(ws));
    g.add_initializer(axes, Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{-1}));
    add_untyped_value(g, mm);
    added.push_back(Node{base + "/MatMul", "MatMul", {}, {a, w}, {mm}});
    if (biased) {
      g.add_initializer(bias, concat_columns(bs));
      add_untyped_value(g, add);
      added.push_back(Node{base + "/Add", "Add", {}, {mm, bias}, {add}});
    }
    const std::string& wide_out = biased ? add : mm;
    if (replaced)
      for (const Branch& b : branches) {
        (*replaced)[base + "/MatMul"].push_back(v.node(b.matmul).name);
        if (b.add >= 0) (*replaced)[base + "/Add"].push_back(v.node(b.add).name);
      }
    // One Slice per branch rather than one Split: each slice can then join its own consumer's
    // group (a layout prologue read straight from the wide output), so no copy is made.
    int64_t off = 0;
    for (size_t i = 0; i < branches.size(); ++i) {
      std::string starts = g.fresh_name(base + "_starts"), ends = g.fresh_name(base + "_ends");
      g.add_initializer(starts, Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{off}));
      g.add_initializer(ends, Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{off + splits[i]}));
      added.push_back(
          Node{base + "/Slice_" + std::to_string(i), "Slice", {}, {wide_out, starts, ends, axes}, {branches[i].out}});
      off += splits[i];
    }
    int64_t wide = 0;
    for (int64_t n : splits) wide += n;
    done.push_back("Rewrote horizontal MatMul: " + names + " read the same input and run as one " +
                   std::to_string(ws[0]->shape()[0]) + "x" + std::to_string(wide) +
                   " MatMul (weights concatenated at load)");
    // The originals go now, not at replace_nodes: holding every group's until the last one was
    // concatenated raised the peak by all of them (BERT-base: +85 MB, 12 x Q|K|V).
    for (const Branch& b : branches)
      for (const std::string& c : {b.weight, b.bias}) {
        if (c.empty()) continue;  // bias-free
        const std::vector<int>& readers = v.consumers(c);
        bool only_removed = !v.is_graph_output(c);
        for (int r : readers) only_removed = only_removed && removed.count(r);
        if (only_removed) g.value(c).constant.reset();
      }
  }
  if (!removed.empty()) replace_nodes(g, removed, std::move(added));
  return done;
}

namespace {

// The node's output is read by two or more Slices and nothing else: a rewritten wide MatMul (its
// bias Add, or the MatMul itself when no branch had a bias).
bool read_by_slices(const GraphView& v, int node, const PatternMatch&) {
  const std::string& out = v.node(node).outputs[0];
  const std::vector<int>& readers = v.consumers(out);
  if (readers.size() < 2 || v.is_graph_output(out)) return false;
  for (int r : readers)
    if (v.node(r).op_type != "Slice") return false;
  return true;
}

class HorizontalMatMulRule : public PatternRule {
 public:
  // Above the MatMul-epilogue rule: the wide MatMul and its bias, read by the branches' Slices.
  HorizontalMatMulRule()
      : PatternRule("horizontal_matmul", FusionKind::HorizontalMatMul, rule_priority::kMatMulEpilogue + 10,
                    (Pattern("MatMul") >> Pattern("Add").with_const().where(read_by_slices)) |
                        Pattern("MatMul").where(read_by_slices)) {}
  void rewrite(Graph& g, const std::function<bool(const Node&)>& skipped, RewriteLog& log) const override {
    for (std::string& line : fuse_horizontal_matmuls(g, skipped, &log.source_nodes))
      log.applied.push_back(std::move(line));
  }
};

}  // namespace

std::shared_ptr<const FusionRule> make_horizontal_matmul_rule() { return std::make_shared<HorizontalMatMulRule>(); }

}  // namespace gaf
