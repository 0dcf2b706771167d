#include "fusion/planner/layout_chains.h"

#include <numeric>

#include "fusion/ops/families.h"

namespace gaf {

namespace {

Shape shape_of(const GraphView& v, const std::string& value) { return v.graph().value(value).type.shape(); }

bool reshape_like(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

bool moves_innermost(const Graph& g, const Node& n) { return transpose_innermost_dim(g, n) > 0; }

bool unit_steps(const GraphView& v, const Node& n) {
  if (n.inputs.size() < 5 || n.inputs[4].empty()) return true;
  const Tensor* steps = v.constant(n.inputs[4]);
  if (!steps) return false;
  for (int64_t s : steps->to_int_vector())
    if (s != 1) return false;
  return true;
}

// Gather of one constant scalar index on an axis other than the innermost: a Slice of one entry
// with that axis dropped (ViT's q, k, v = qkv[0], qkv[1], qkv[2]), so rows stay runs of memory.
bool takes_one_entry(const GraphView& v, const Node& n) {
  if (n.inputs.size() != 2) return false;
  const Tensor* idx = v.constant(n.inputs[1]);
  const int64_t rank = static_cast<int64_t>(v.graph().value(n.inputs[0]).type.dims.size());
  int64_t axis = n.attrs.get_int("axis", 0);
  if (axis < 0) axis += rank;
  return idx && idx->shape().empty() && axis < rank - 1;
}

}  // namespace

std::string layout_prologue_refusal(const GraphView& v, const std::set<int>& chain, int matmul) {
  bool into_b = false;
  for (int n : chain)
    for (const std::string& o : v.node(n).outputs)
      into_b = into_b || (v.node(matmul).inputs.size() > 1 && v.node(matmul).inputs[1] == o);
  for (int n : chain) {
    const Node& node = v.node(n);
    const std::string why =
        "'" + node.name + "' would be recomputed inside MatMul '" + v.node(matmul).name + "''s reduction loop";
    const std::string& op = node.op_type;
    if (op == "Transpose") {
      if (moves_innermost(v.graph(), node) && !into_b) return why + " (it moves the innermost axis of A)";
    } else if (op == "Slice") {
      if (!unit_steps(v, node)) return why + " (a strided Slice)";
    } else if (op == "Split") {
      // Unit-step slices, one per output (GPT-2's q, k, v = c_attn(x).split(hidden, dim=2)).
    } else if (op == "Gather") {
      if (!takes_one_entry(v, node)) return why + " (a Gather of several indices or along the innermost axis)";
    } else if (reshape_like(op)) {
      const Shape in = shape_of(v, node.inputs[0]), out = shape_of(v, node.outputs[0]);
      if (!in.empty() && !out.empty() && out.back() != 0 && in.back() % out.back() != 0)
        return why + " (its rows join " + std::to_string(in.back()) + "-element runs of its input)";
    } else {
      return why;
    }
  }
  return "";
}

int transpose_innermost_dim(const Graph& g, const Node& n) {
  const TensorDesc in{g.value(n.inputs[0]).type.dtype, g.value(n.inputs[0]).type.shape()};
  const std::vector<int> perm = transpose_perm(InferContext(n, {&in}, {nullptr}));
  const int rank = static_cast<int>(perm.size());
  for (int j = 0; j + 1 < rank; ++j)
    if (perm[j] == rank - 1) return rank - 1 - j;
  return 0;
}

int64_t layout_epilogue_run(const Graph& g, const std::vector<int>& nodes, size_t pos, const std::string& output) {
  const Node& mm = g.nodes()[nodes[pos]];
  if (mm.outputs.empty() || pos + 1 >= nodes.size()) return 0;
  // A 1-D operand squeezes an axis away: the output's last two axes are then not (rows, columns).
  for (size_t i = 0; i < 2 && i < mm.inputs.size(); ++i)
    if (g.value(mm.inputs[i]).type.dims.size() < 2) return 0;
  std::string value = mm.outputs[0];
  Shape shape = g.value(value).type.shape();
  if (shape.size() < 2) return 0;
  int row = static_cast<int>(shape.size()) - 2;  // the axis that walks the MatMul's rows
  int64_t run = shape.back();
  for (size_t q = pos + 1; q < nodes.size(); ++q) {
    const Node& n = g.nodes()[nodes[q]];
    if (n.inputs.empty() || n.inputs[0] != value || n.outputs.size() != 1) return 0;
    const Shape out = g.value(n.outputs[0]).type.shape();
    if (n.op_type == "Transpose") {
      if (moves_innermost(g, n)) return 0;
      std::vector<int64_t> perm = n.attrs.get_ints("perm", {});
      int to = -1;
      for (size_t j = 0; j < perm.size(); ++j)
        if (perm[j] == row) to = static_cast<int>(j);
      if (to < 0) return 0;
      row = to;
    } else if (reshape_like(n.op_type)) {
      // The row axis survives when some output axis has its extent and the same number of
      // elements after it (row-major: then it is the same axis).
      auto after = [](const Shape& s, size_t a) {
        int64_t p = 1;
        for (size_t i = a + 1; i < s.size(); ++i) p *= s[i];
        return p;
      };
      int to = -1;
      for (size_t j = 0; j < out.size() && to < 0; ++j)
        if (out[j] == shape[row] && after(out, j) == after(shape, row)) to = static_cast<int>(j);
      if (to < 0 || out.empty()) return 0;
      row = to;
      run = std::gcd(run, out.back());
    } else {
      return 0;
    }
    value = n.outputs[0];
    shape = out;
  }
  if (value != output || row != static_cast<int>(shape.size()) - 2) return 0;
  return run;
}

}  // namespace gaf
