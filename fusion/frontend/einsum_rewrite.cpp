#include "fusion/frontend/einsum_rewrite.h"

#include <algorithm>

#include "fusion/ops/einsum_equation.h"

namespace gaf {

namespace {

bool static_float(const Graph& g, const std::string& v) {
  if (v.empty() || !g.has_value(v)) return false;
  const Value& x = g.value(v);
  return x.type.rank_known && x.type.is_static() && !x.is_symbolic() && x.type.dtype == DType::Float32;
}

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Emits the nodes of one rewrite into `nodes`, creating their values in `g`.
class Emitter {
 public:
  Emitter(Graph& g, std::vector<Node>& nodes, const std::string& name) : g_(g), nodes_(nodes), name_(name) {}

  // `x` (axes labelled `from`, extents `shape`) transposed to the label order `to`; x itself when
  // the order is the same.
  std::string transpose(const std::string& x, const std::vector<int>& from, const std::vector<int>& to,
                        const Shape& shape, const std::string& suffix, const std::string& out = "") {
    std::vector<int64_t> perm;
    Shape s;
    for (int l : to) {
      const auto at = std::find(from.begin(), from.end(), l) - from.begin();
      perm.push_back(at);
      s.push_back(shape[static_cast<size_t>(at)]);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity && out.empty()) return x;
    const std::string y = out.empty() ? value(suffix, s) : out;
    Node n{name_ + "/" + suffix, identity ? "Identity" : "Transpose", {}, {x}, {y}};
    if (!identity) n.attrs.set("perm", perm);
    nodes_.push_back(std::move(n));
    return y;
  }

  // `x` reshaped to `to` (x itself when its shape is already `to`).
  std::string reshape(const std::string& x, const Shape& from, const Shape& to, const std::string& suffix,
                      const std::string& out = "") {
    if (from == to && out.empty()) return x;
    const std::string y = out.empty() ? value(suffix, to) : out;
    Tensor shape(DType::Int64, {static_cast<int64_t>(to.size())});
    for (size_t i = 0; i < to.size(); ++i) shape.data<int64_t>()[i] = to[i];
    const std::string s = g_.fresh_name(name_ + "/" + suffix + "_shape");
    g_.add_initializer(s, std::move(shape));
    nodes_.push_back(Node{name_ + "/" + suffix, "Reshape", {}, {x, s}, {y}});
    return y;
  }

  std::string value(const std::string& suffix, const Shape& s) {
    const std::string v = g_.fresh_name(name_ + "/" + suffix + "_out");
    g_.add_value(v, TensorType(DType::Float32, s));
    return v;
  }

 private:
  Graph& g_;
  std::vector<Node>& nodes_;
  std::string name_;
};

// The rewrite of `n`, or false (nothing emitted) when it is not a product of two operands.
bool rewrite(Graph& g, const Node& n, std::vector<Node>& nodes) {
  if (n.op_type != "Einsum" || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const std::string &a = n.inputs[0], &b = n.inputs[1];
  if (!static_float(g, a) || !static_float(g, b) || !static_float(g, n.outputs[0])) return false;
  const Shape sa = g.value(a).type.shape(), sb = g.value(b).type.shape();
  EinsumEquation e;
  std::vector<int64_t> ext;
  try {
    e = EinsumEquation::parse(n.attrs.get_string("equation", ""), {static_cast<int>(sa.size()), static_cast<int>(sb.size())});
    ext = e.extents({sa, sb});
  } catch (const GafError&) {
    return false;  // the op's own checks report it
  }
  const std::vector<int> &la = e.inputs[0], &lb = e.inputs[1];
  for (const std::vector<int>* t : {&la, &lb})
    for (size_t i = 0; i < t->size(); ++i)
      if (std::count(t->begin(), t->end(), (*t)[i]) != 1) return false;  // a diagonal
  std::vector<int> batch, contracted, free_a, free_b;
  for (int l : e.output) {
    if (has(la, l) && has(lb, l))
      batch.push_back(l);
    else if (has(la, l))
      free_a.push_back(l);
    else
      free_b.push_back(l);
  }
  for (int l : la)
    if (!e.in_output(l)) {
      if (!has(lb, l)) return false;  // summed over one operand alone
      contracted.push_back(l);
    }
  for (int l : lb)
    if (!e.in_output(l) && !has(la, l)) return false;
  // Each shared label with one extent in both (no broadcast ellipsis axis).
  auto extent_in = [](const std::vector<int>& labels, const Shape& s, int l) {
    return s[static_cast<size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin())];
  };
  for (int l : la)
    if (has(lb, l) && extent_in(la, sa, l) != extent_in(lb, sb, l)) return false;

  auto extents_of = [&](const std::vector<int>& labels) {
    Shape s;
    for (int l : labels) s.push_back(ext[static_cast<size_t>(e.index_of(l))]);
    return s;
  };
  auto product = [&](const std::vector<int>& labels) {
    int64_t p = 1;
    for (int64_t x : extents_of(labels)) p *= x;
    return p;
  };
  auto cat = [](std::vector<int> x, const std::vector<int>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  Emitter em(g, nodes, n.name);
  const Shape batch_shape = extents_of(batch);
  // A as (batch, free A, contracted) -> [batch..., M, K]; B as (batch, contracted, free B) -> [batch..., K, N].
  const std::vector<int> order_a = cat(cat(batch, free_a), contracted), order_b = cat(cat(batch, contracted), free_b);
  Shape ma = batch_shape, mb = batch_shape;
  ma.push_back(product(free_a));
  ma.push_back(product(contracted));
  mb.push_back(product(contracted));
  mb.push_back(product(free_b));
  const std::string ta = em.transpose(a, la, order_a, sa, "a_transposed");
  const std::string tb = em.transpose(b, lb, order_b, sb, "b_transposed");
  const std::string ra = em.reshape(ta, extents_of(order_a), ma, "a_matrix");
  const std::string rb = em.reshape(tb, extents_of(order_b), mb, "b_matrix");
  Shape mo = batch_shape;
  mo.push_back(ma[ma.size() - 2]);
  mo.push_back(mb.back());
  const std::vector<int> order_out = cat(cat(batch, free_a), free_b);
  const Shape out_shape = extents_of(order_out);
  const bool reshaped = mo != out_shape, transposed = order_out != e.output;
  const std::string mm = reshaped || transposed ? em.value("product", mo) : n.outputs[0];
  nodes.push_back(Node{n.name, "MatMul", {}, {ra, rb}, {mm}});
  if (!reshaped && !transposed) return true;
  const std::string back = em.reshape(mm, mo, out_shape, "product_axes", transposed ? "" : n.outputs[0]);
  if (transposed) em.transpose(back, order_out, e.output, out_shape, "out_transposed", n.outputs[0]);
  return true;
}

}  // namespace

int einsum_as_matmul(Graph& g) {
  std::vector<Node> nodes;
  int rewritten = 0;
  const Graph& cg = g;  // rewrite() adds values and initializers, never nodes
  for (const Node& n : cg.nodes()) {
    if (rewrite(g, n, nodes))
      ++rewritten;
    else
      nodes.push_back(n);
  }
  if (rewritten) g.set_nodes(std::move(nodes));
  return rewritten;
}

}  // namespace gaf
