#include "fusion/planner/tensor_parallel.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "fusion/ops/registry.h"
#include "fusion/planner/graph_rewrite.h"
#include "fusion/planner/pattern.h"

namespace gaf {

namespace {

// A value split across the ranks along `axis`: the axis is `blocks` equal contiguous blocks and
// each block is cut into P parts, rank r holding part r of every block (blocks > 1 is a fused
// QKV projection's output before its Split). `origin`: the index of the column-parallel seed it
// comes from, -1 when it mixes several.
struct Split {
  int axis = 0;
  int64_t blocks = 1;
  int origin = -1;
};

// What a region changes, applied only once the whole region is known to work.
struct RegionEdits {
  std::map<std::string, Split> split;  // values split across ranks
  struct ConstSlice {
    int node, input, axis;
    int64_t blocks;
  };
  std::vector<ConstSlice> slices;                                    // constant operands each rank slices
  std::map<std::pair<int, int>, std::vector<int64_t>> new_contents;  // (node, input) -> int64 constant
  std::map<int, std::vector<int64_t>> new_split_attr;                // Split nodes with a `split` attribute
  std::vector<int> row_parallel;                                     // MatMuls followed by an AllReduce
  std::set<int> nodes;
};

// Thrown inside a region's propagation; the region stays replicated with this reason.
struct NotSplittable {
  int node;
  std::string why;
};

// The retry a fused projection asks for: seed `seed` with its output as `blocks` blocks.
struct NeedBlocks {
  int seed;
  int64_t blocks;
};

Shape shape_of(const Graph& g, const std::string& v) { return g.value(v).type.shape(); }

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Where a split of `in` along s.axis lands when the same elements are viewed as `out` (Reshape,
// Flatten, (Un)Squeeze): the axes form groups with equal products. Inside its group, the axes
// before the split one (and its own blocks) make the group's flat range `blocks` equal blocks,
// each cut into P parts; the output axis that takes the split is the first of the group whose
// extent those blocks times P divide (with blocks of its own for the axes before it).
std::optional<Split> reshape_split(const Shape& in, const Shape& out, const Split& s, int64_t P) {
  std::vector<int64_t> pin(in.size() + 1, 1), pout(out.size() + 1, 1);
  for (size_t i = 0; i < in.size(); ++i) pin[i + 1] = pin[i] * in[i];
  for (size_t j = 0; j < out.size(); ++j) pout[j + 1] = pout[j] * out[j];
  const std::set<int64_t> out_prefixes(pout.begin(), pout.end());
  const size_t a = static_cast<size_t>(s.axis);
  int64_t b0 = 1, b1 = pin.back();
  for (size_t i = 0; i <= a; ++i)
    if (out_prefixes.count(pin[i])) b0 = pin[i];
  for (size_t i = pin.size(); i-- > a + 1;)
    if (out_prefixes.count(pin[i])) b1 = pin[i];
  if (b0 == 0) return std::nullopt;
  const int64_t blocks = (pin[a] / b0) * s.blocks;  // the group's flat range: blocks x P parts
  for (size_t j = 0; j < out.size(); ++j) {
    if (pout[j] < b0 || pout[j + 1] > b1) continue;
    const int64_t before = pout[j] / b0;
    if (before > blocks) break;
    if (blocks % before == 0 && out[j] > 1 && out[j] % (P * (blocks / before)) == 0)
      return Split{static_cast<int>(j), blocks / before, s.origin};
  }
  return std::nullopt;
}

// When a split axis is viewed as [parts, heads, d] with `parts` not divisible by P but `heads`
// divisible: the parts (a fused projection's Q, K, V); 0 otherwise (a plain [heads, d] whose
// heads P does not divide stays that: splitting d would only move the problem to attention).
int64_t fused_parts(const Shape& in, const Shape& out, const Split& s, int64_t P) {
  const int64_t n = in[static_cast<size_t>(s.axis)];
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(s.axis) + 1; a < in.size(); ++a) inner *= in[a];
  // The output axes whose product, with the input's inner axes, is the split axis times inner.
  int64_t suffix = 1;
  for (size_t j = out.size(); j-- > 0;) {
    suffix *= out[j];
    if (suffix == n * inner)
      return j + 2 < out.size() && out[j] > 1 && out[j] % P != 0 && out[j + 1] % P == 0 ? out[j] : 0;
    if (suffix > n * inner) return 0;
  }
  return 0;
}

Tensor int64_tensor(const std::vector<int64_t>& v) {
  return Tensor::from_values(DType::Int64, {static_cast<int64_t>(v.size())}, v);
}

// Rank r's part of `t` along `axis` (blocks x P parts).
Tensor slice_for_rank(const Tensor& t, int axis, int64_t blocks, int64_t P, int64_t r) {
  const Shape& s = t.shape();
  const int64_t n = s[static_cast<size_t>(axis)], part = n / blocks / P;
  Shape o = s;
  o[static_cast<size_t>(axis)] = part * blocks;
  Tensor out = Tensor::uninitialized(t.dtype(), o);
  const int64_t elem = static_cast<int64_t>(byte_size(t.dtype(), {1}));
  const int64_t outer = product(s, 0, static_cast<size_t>(axis));
  const int64_t inner = product(s, static_cast<size_t>(axis) + 1, s.size()) * elem;
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t b = 0; b < blocks; ++b)
      std::memcpy(dst + ((i * blocks + b) * part) * inner, src + (i * n + b * (n / blocks) + r * part) * inner,
                  static_cast<size_t>(part * inner));
  return out;
}

class RegionFinder {
 public:
  RegionFinder(const Graph& g, const GraphView& v, int64_t P) : g_(g), v_(v), P_(P) {}

  // Follows the split of `seeds`' outputs (seed k as seed_blocks[k] blocks) to the row-parallel
  // MatMuls. Throws NotSplittable or NeedBlocks.
  RegionEdits find(const std::vector<int>& seeds, const std::vector<int64_t>& seed_blocks) {
    e_ = RegionEdits();
    horizon_ = -1;
    int first = v_.num_nodes();
    for (size_t k = 0; k < seeds.size(); ++k) {
      const Node& m = node(seeds[k]);
      // x·W splits W's columns and the output's last axis; W·x (a constant A) W's rows and the
      // output's second to last.
      const bool weight_b = v_.constant(m.inputs[1]) != nullptr;
      const int wi = weight_b ? 1 : 0, wa = weight_b ? 1 : 0;
      const int64_t extent = shape_of(g_, m.inputs[static_cast<size_t>(wi)])[static_cast<size_t>(wa)];
      if (extent % (P_ * seed_blocks[k]) != 0)
        fail(seeds[k], "its weight's " + std::to_string(extent) + (weight_b ? " columns" : " rows") +
                           " do not divide into " + std::to_string(P_) + " ranks");
      e_.slices.push_back({seeds[k], wi, wa, seed_blocks[k]});
      mark(m.outputs[0], Split{rank_of(m.outputs[0]) - (weight_b ? 1 : 2), seed_blocks[k], static_cast<int>(k)});
      e_.nodes.insert(seeds[k]);
      first = std::min(first, v_.topo_position(seeds[k]));
    }
    const std::set<int> seed_set(seeds.begin(), seeds.end());
    // Stops after the last node that reads a split value: a region costs its own size, not the graph's.
    for (size_t p = static_cast<size_t>(first); p < v_.topo_order().size() && static_cast<int>(p) <= horizon_; ++p) {
      const int n = v_.topo_order()[p];
      if (seed_set.count(n)) continue;
      bool reads_split = false;
      for (const std::string& in : node(n).inputs) reads_split = reads_split || (!in.empty() && e_.split.count(in));
      if (!reads_split) continue;
      e_.nodes.insert(n);
      propagate(n);
    }
    for (const auto& [value, s] : e_.split)
      if (v_.is_graph_output(value)) fail(v_.producer(value), "its output '" + value + "' is a graph output");
    if (e_.row_parallel.empty()) fail(seeds[0], "the split reaches no row-parallel MatMul");
    return e_;
  }

 private:
  const Node& node(int n) const { return v_.node(n); }
  int rank_of(const std::string& value) const { return static_cast<int>(g_.value(value).type.dims.size()); }
  const Split* split_of(const std::string& value) const {
    auto it = e_.split.find(value);
    return it == e_.split.end() ? nullptr : &it->second;
  }
  [[noreturn]] void fail(int n, const std::string& why) const { throw NotSplittable{n, why}; }
  void mark(const std::string& value, const Split& s) {
    e_.split[value] = s;
    for (int c : v_.consumers(value)) horizon_ = std::max(horizon_, v_.topo_position(c));
  }
  void set_outputs(int n, const Split& s) {
    for (const std::string& o : node(n).outputs)
      if (!o.empty()) mark(o, s);
  }
  std::vector<int64_t> constant_ints(int n, int input) const {
    const Tensor* t = input < static_cast<int>(node(n).inputs.size())
                          ? v_.constant(node(n).inputs[static_cast<size_t>(input)])
                          : nullptr;
    if (!t) fail(n, "input " + std::to_string(input) + " is not a constant");
    return t->to_int_vector();
  }

  void propagate(int n) {
    const Node& nd = node(n);
    const OpSchema* schema = OpRegistry::global().find(nd.op_type);
    using Rule = OpSchema::SplitRule;
    const Rule rule = schema ? schema->split_rule : Rule::Stop;
    if (rule == Rule::MatMul) return matmul(n);
    if (rule == Rule::ByClass && (schema->op_class == OpClass::Elementwise || schema->op_class == OpClass::Broadcast))
      return broadcast(n);
    if (rule == Rule::Concat) return concat(n);
    if (rule == Rule::ByClass || rule == Rule::Stop) fail(n, nd.op_type + " is not known to run split");
    // The rules below follow their data operand (input 0).
    if (nd.inputs.empty() || nd.inputs[0].empty() || !split_of(nd.inputs[0]))
      fail(n, "only an operand other than its data is split");
    switch (rule) {
      case Rule::Transpose: return transpose(n);
      case Rule::Reshape: return reshape(n);
      case Rule::Expand: return expand(n);
      case Rule::Split: return split(n);
      case Rule::Slice: return slice(n);
      case Rule::Gather: return gather(n);
      case Rule::Softmax: return softmax(n);
      case Rule::Reduce: return reduce(n);
      case Rule::LayerNorm: return layernorm(n);
      default: fail(n, nd.op_type + " is not known to run split");
    }
  }

  // Operands broadcast against each other: the split ones must agree on the output axis; the
  // others are the same along it (extent 1 or absent) or constants each rank slices.
  void broadcast(int n) {
    const Node& nd = node(n);
    const int R = rank_of(nd.outputs[0]);
    std::optional<Split> out;
    for (const std::string& in : nd.inputs) {
      const Split* s = in.empty() ? nullptr : split_of(in);
      if (!s) continue;
      Split aligned = *s;
      aligned.axis += R - rank_of(in);
      if (out && (out->axis != aligned.axis || out->blocks != aligned.blocks))
        fail(n, "its operands are split along different axes");
      if (out && out->origin != aligned.origin) aligned.origin = -1;
      out = aligned;
    }
    for (size_t i = 0; i < nd.inputs.size(); ++i) {
      const std::string& in = nd.inputs[i];
      if (in.empty() || split_of(in)) continue;
      const int pos = out->axis - (R - rank_of(in));
      if (pos < 0 || shape_of(g_, in)[static_cast<size_t>(pos)] == 1) continue;  // same for every part
      if (!v_.constant(in)) fail(n, "operand '" + in + "' varies along the split axis but is not split");
      e_.slices.push_back({n, static_cast<int>(i), pos, out->blocks});
    }
    set_outputs(n, *out);
  }

  void matmul(int n) {
    const Node& nd = node(n);
    const Split* sa = split_of(nd.inputs[0]);
    const Split* sb = split_of(nd.inputs[1]);
    const int ra = rank_of(nd.inputs[0]), rb = rank_of(nd.inputs[1]), R = rank_of(nd.outputs[0]);
    const bool contracts = (sa && !sb && sa->axis == ra - 1) || (sb && !sa && sb->axis == rb - 2);
    if (contracts && g_.value(nd.outputs[0]).type.dtype != DType::Float32)
      fail(n, "contracts over the split axis but its output is not float32 (AllReduce sums float32)");
    if (sa && !sb && sa->axis == ra - 1) {  // contracts over the split: row-parallel
      if (!v_.constant(nd.inputs[1]) || rb != 2) fail(n, "contracts over the split axis with a non-constant B");
      if (sa->blocks != 1) fail(n, "contracts over a split made of several blocks");
      e_.slices.push_back({n, 1, 0, 1});
      e_.row_parallel.push_back(n);
      return;  // its output is a partial sum: complete after the AllReduce, not split
    }
    if (sb && !sa && sb->axis == rb - 2) {  // W·x contracting over the split: row-parallel too
      if (!v_.constant(nd.inputs[0]) || ra != 2) fail(n, "contracts over the split axis with a non-constant A");
      if (sb->blocks != 1) fail(n, "contracts over a split made of several blocks");
      e_.slices.push_back({n, 0, 1, 1});
      e_.row_parallel.push_back(n);
      return;
    }
    // Batched over heads: both operands split along the same batch axis (or one the same along it).
    std::optional<Split> out;
    for (int k = 0; k < 2; ++k) {
      const Split* s = k == 0 ? sa : sb;
      const int r = k == 0 ? ra : rb;
      if (!s) continue;
      if (s->axis >= r - 2) fail(n, "operand " + std::to_string(k) + " is split along a matrix axis");
      Split aligned = *s;
      aligned.axis += R - r;
      if (out && out->axis != aligned.axis) fail(n, "its operands are split along different axes");
      out = aligned;
    }
    for (int k = 0; k < 2; ++k) {
      const Split* s = k == 0 ? sa : sb;
      const int r = k == 0 ? ra : rb;
      if (s) continue;
      const int pos = out->axis - (R - r);
      if (pos >= 0 && pos < r - 2 && shape_of(g_, nd.inputs[static_cast<size_t>(k)])[static_cast<size_t>(pos)] != 1)
        fail(n, "operand " + std::to_string(k) + " varies along the split axis but is not split");
    }
    set_outputs(n, *out);
  }

  void transpose(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    std::vector<int64_t> perm = nd.attrs.get_ints("perm", {});
    if (perm.empty())
      for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    for (size_t j = 0; j < perm.size(); ++j)
      if ((perm[j] + r) % r == s.axis) return set_outputs(n, Split{static_cast<int>(j), s.blocks, s.origin});
    fail(n, "bad perm");
  }

  void reshape(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const Shape in = shape_of(g_, nd.inputs[0]), out = shape_of(g_, nd.outputs[0]);
    const std::optional<Split> o = reshape_split(in, out, s, P_);
    // A fused projection viewed as [.., parts, heads, d] (ViT's qkv): slice its weight per part.
    if (!o && s.blocks == 1 && s.origin >= 0)
      if (int64_t parts = fused_parts(in, out, s, P_); parts > 1) throw NeedBlocks{s.origin, parts};
    if (!o)
      fail(n, "the split axis (extent " + std::to_string(in[static_cast<size_t>(s.axis)]) +
                  ") does not map onto an output axis that " + std::to_string(P_) + " ranks divide");
    if (nd.op_type == "Reshape") {
      std::vector<int64_t> shape = constant_ints(n, 1);
      if (shape.size() != out.size()) fail(n, "shape constant of unexpected length");
      for (size_t j = 0; j < shape.size(); ++j) {
        const bool copies_split = shape[j] == 0 && static_cast<int>(j) == s.axis;
        if (static_cast<int>(j) == o->axis) {
          if (shape[j] > 0)
            shape[j] /= P_;
          else if (shape[j] == 0 && !copies_split)
            fail(n, "the split output axis copies an unsplit input axis");
        } else if (copies_split) {
          fail(n, "an unsplit output axis copies the split input axis");
        }
      }
      e_.new_contents[{n, 1}] = shape;
    }
    set_outputs(n, *o);
  }

  // GQA's K/V repeat: Expand over the split (KV-head) axis keeps the split; a shape entry that
  // names the whole axis is rewritten to the local extent.
  void expand(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    if (split_of(nd.inputs[1])) fail(n, "its shape is split");
    std::vector<int64_t> shape = constant_ints(n, 1);
    const int R = rank_of(nd.outputs[0]), r = rank_of(nd.inputs[0]);
    const int axis = s.axis + (R - r);
    const int k = axis - (R - static_cast<int>(shape.size()));
    if (k >= 0) {
      const int64_t full = shape_of(g_, nd.inputs[0])[static_cast<size_t>(s.axis)];
      if (shape[static_cast<size_t>(k)] == full)
        shape[static_cast<size_t>(k)] = full / P_;
      else if (shape[static_cast<size_t>(k)] != 1)
        fail(n, "expands the split axis");
      e_.new_contents[{n, 1}] = shape;
    }
    set_outputs(n, Split{axis, s.blocks, s.origin});
  }

  void split(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    const int axis = static_cast<int>((nd.attrs.get_int("axis", 0) + r) % r);
    if (axis != s.axis) return set_outputs(n, s);
    const int64_t parts = static_cast<int64_t>(nd.outputs.size());
    std::vector<int64_t> sizes;
    if (nd.inputs.size() > 1 && !nd.inputs[1].empty())
      sizes = constant_ints(n, 1);
    else
      sizes = nd.attrs.get_ints("split", {});
    const int64_t full = shape_of(g_, nd.inputs[0])[static_cast<size_t>(axis)];
    for (int64_t size : sizes)
      if (size * parts != full) fail(n, "splits the split axis into unequal parts");
    // A fused projection (Q, K and V in one MatMul) split into its parts: its weight is sliced
    // per part instead. Parts that are fewer than the ranks' share (repeat_interleave's export
    // splits the K/V heads one by one) cannot be.
    if (s.blocks == 1 && parts > 1 && s.origin >= 0 && full % (parts * P_) == 0) throw NeedBlocks{s.origin, parts};
    if (s.blocks != parts)
      fail(n, "splits the split axis into " + std::to_string(parts) + " parts, not its " + std::to_string(s.blocks) +
                  " blocks");
    if (!sizes.empty()) {
      for (int64_t& size : sizes) size /= P_;
      if (nd.inputs.size() > 1 && !nd.inputs[1].empty())
        e_.new_contents[{n, 1}] = sizes;
      else
        e_.new_split_attr[n] = sizes;
    }
    set_outputs(n, Split{s.axis, 1, s.origin});
  }

  // Rotary embeddings slice the head dimension: fine unless the slice cuts the split axis.
  void slice(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    const Shape in = shape_of(g_, nd.inputs[0]);
    const std::vector<int64_t> starts = constant_ints(n, 1), ends = constant_ints(n, 2);
    std::vector<int64_t> axes, steps;
    if (nd.inputs.size() > 3 && !nd.inputs[3].empty())
      axes = constant_ints(n, 3);
    else
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (nd.inputs.size() > 4 && !nd.inputs[4].empty()) steps = constant_ints(n, 4);
    for (size_t k = 0; k < axes.size(); ++k) {
      const bool whole =
          starts[k] == 0 && ends[k] >= in[static_cast<size_t>(s.axis)] && (k >= steps.size() || steps[k] == 1);
      if ((axes[k] + r) % r == s.axis && !whole) fail(n, "slices the split axis");
    }
    set_outputs(n, s);
  }

  void concat(int n) {
    const Node& nd = node(n);
    const int r = rank_of(nd.outputs[0]);
    const int axis = static_cast<int>((nd.attrs.get_int("axis", 0) + r) % r);
    const Split* first = nullptr;
    for (const std::string& in : nd.inputs) {
      const Split* s = split_of(in);
      if (!s) fail(n, "operand '" + in + "' is not split like the others");
      if (first && (s->axis != first->axis || s->blocks != first->blocks)) fail(n, "operands split differently");
      first = s;
    }
    if (first->axis == axis) fail(n, "concatenates along the split axis");
    set_outputs(n, *first);
  }

  void gather(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    if (split_of(nd.inputs[1]) || !v_.constant(nd.inputs[1])) fail(n, "its indices are not constant");
    const int r = rank_of(nd.inputs[0]);
    const int axis = static_cast<int>((nd.attrs.get_int("axis", 0) + r) % r);
    if (axis == s.axis) fail(n, "gathers along the split axis");
    const int idx_rank = rank_of(nd.inputs[1]);
    set_outputs(n, Split{s.axis < axis ? s.axis : s.axis + idx_rank - 1, s.blocks, s.origin});
  }

  void softmax(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    const bool coerced = nd.attrs.get_int("_opset", 13) < 13;  // flattened to 2-D from `axis` on
    const int axis = static_cast<int>((nd.attrs.get_int("axis", coerced ? 1 : -1) + r) % r);
    if (coerced ? s.axis >= axis : s.axis == axis) fail(n, "normalises over the split axis");
    set_outputs(n, s);
  }

  void reduce(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    std::vector<int64_t> axes = nd.attrs.get_ints("axes", {});
    if (axes.empty() && nd.inputs.size() > 1 && !nd.inputs[1].empty()) axes = constant_ints(n, 1);
    if (axes.empty()) fail(n, "reduces every axis");
    int out_axis = s.axis;
    for (int64_t a : axes) {
      const int ax = static_cast<int>((a + r) % r);
      if (ax == s.axis) fail(n, "reduces over the split axis");
      if (ax < s.axis && nd.attrs.get_int("keepdims", 1) == 0) --out_axis;
    }
    set_outputs(n, Split{out_axis, s.blocks, s.origin});
  }

  void layernorm(int n) {
    const Node& nd = node(n);
    const Split s = *split_of(nd.inputs[0]);
    const int r = rank_of(nd.inputs[0]);
    const int axis = static_cast<int>((nd.attrs.get_int("axis", -1) + r) % r);
    if (s.axis >= axis) fail(n, "normalises over the split axis");
    for (size_t i = 1; i < nd.inputs.size(); ++i)
      if (!nd.inputs[i].empty() && split_of(nd.inputs[i])) fail(n, "its scale or bias is split");
    set_outputs(n, s);
  }

  const Graph& g_;
  const GraphView& v_;
  int64_t P_;
  RegionEdits e_;
  int horizon_ = -1;  // topological position of the last reader of a split value so far
};

// MatMuls that may start a column-parallel set: one operand a constant 2-D weight, the other
// an activation.
bool column_candidate(const GraphView& v, int n) {
  const Node& nd = v.node(n);
  if (nd.op_type != "MatMul" || nd.inputs.size() != 2) return false;
  const bool a = v.constant(nd.inputs[0]) != nullptr, b = v.constant(nd.inputs[1]) != nullptr;
  if (a == b) return false;
  return v.graph().value(nd.inputs[b ? 1 : 0]).type.dims.size() == 2;
}

// The activation a candidate reads, followed up through layout ops (K computed as W·xᵀ reads
// the same x as Q and V do): candidates with the same source form one set.
std::string activation_source(const GraphView& v, int n) {
  const Node& nd = v.node(n);
  std::string x = v.constant(nd.inputs[0]) ? nd.inputs[1] : nd.inputs[0];
  for (int p = v.producer(x); p >= 0; p = v.producer(x)) {
    const std::string& op = v.node(p).op_type;
    if (op != "Transpose" && op != "Reshape" && op != "Unsqueeze" && op != "Squeeze") break;
    x = v.node(p).inputs[0];
  }
  return x;
}

std::string names(const Graph& g, const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "'" : ", '") + g.nodes()[static_cast<size_t>(n)].name + "'";
  return s;
}

void apply(Graph& g, const std::vector<RegionEdits>& regions, const TensorParallel& tp, ShardResult& result) {
  std::map<std::tuple<std::string, int, int64_t>, std::string> sliced;  // (constant, axis, blocks) -> local copy
  std::vector<Node> added;
  for (const RegionEdits& e : regions) {
    for (const RegionEdits::ConstSlice& c : e.slices) {
      Node& nd = g.nodes()[static_cast<size_t>(c.node)];
      const std::string orig = nd.inputs[static_cast<size_t>(c.input)];
      const auto key = std::make_tuple(orig, c.axis, c.blocks);
      auto it = sliced.find(key);
      if (it == sliced.end()) {
        const std::string name = g.fresh_name(orig + ".tp" + std::to_string(tp.rank));
        g.add_initializer(name, slice_for_rank(*g.value(orig).constant, c.axis, c.blocks, tp.size, tp.rank));
        it = sliced.emplace(key, name).first;
      }
      nd.inputs[static_cast<size_t>(c.input)] = it->second;
    }
    for (const auto& [at, contents] : e.new_contents) {
      Node& nd = g.nodes()[static_cast<size_t>(at.first)];
      const std::string name = g.fresh_name(nd.inputs[static_cast<size_t>(at.second)] + ".tp");
      g.add_initializer(name, int64_tensor(contents));
      nd.inputs[static_cast<size_t>(at.second)] = name;
    }
    for (const auto& [n, sizes] : e.new_split_attr) g.nodes()[static_cast<size_t>(n)].attrs.set("split", sizes);
    for (int n : e.row_parallel) {
      Node& mm = g.nodes()[static_cast<size_t>(n)];
      const std::string full = mm.outputs[0];
      const std::string partial = g.fresh_name(full + ".partial");
      add_untyped_value(g, partial);
      mm.outputs[0] = partial;
      Node ar;
      ar.name = mm.name + "/allreduce";
      ar.op_type = "AllReduce";
      ar.attrs.set("group_size", static_cast<int64_t>(tp.size));
      ar.inputs = {partial};
      ar.outputs = {full};
      added.push_back(std::move(ar));
      ++result.all_reduces;
    }
  }
  // Values the region re-typed (smaller now) are inferred again; the full weights are dropped.
  for (const RegionEdits& e : regions)
    for (const auto& [value, s] : e.split) {
      (void)s;
      g.value(value).type.rank_known = false;
      g.value(value).type.dims.clear();
    }
  replace_nodes(g, {}, std::move(added));
}

}  // namespace

ShardResult shard_tensor_parallel(Graph& g, const TensorParallel& tp) {
  ShardResult result;
  if (tp.size < 1 || tp.size > 4096) throw GafError("--tp must be in 1..4096, got " + std::to_string(tp.size));
  if (tp.rank < 0 || tp.rank >= tp.size)
    throw GafError("tensor-parallel rank " + std::to_string(tp.rank) + " is outside 0.." + std::to_string(tp.size - 1));
  if (tp.size == 1) return result;
  if (!g.dynamic.empty())
    throw GafError("--tp with dynamic dims (--dim NAME=LO..HI) is not supported yet; bind every dim");
  for (const Node& n : g.nodes())
    if (is_collective(n)) {
      result.refused.push_back(RefusedMerge{
          ReasonCode::HasCollectives,
          "Left as is: the graph has collectives already ('" + n.name + "'), so each rank runs it as it is",
          "tensor_parallel",
          {n.name}});
      return result;
    }

  const GraphView v(g);
  RegionFinder finder(g, v, tp.size);
  std::map<std::string, std::vector<int>> by_source;  // candidates per activation, topological order
  for (int n : v.topo_order())
    if (column_candidate(v, n)) by_source[activation_source(v, n)].push_back(n);
  std::vector<RegionEdits> regions;
  std::set<int> taken, tried;
  for (int n : v.topo_order()) {
    if (taken.count(n) || tried.count(n) || !column_candidate(v, n)) continue;
    // The set: every candidate MatMul reading the same activation.
    std::vector<int> seeds;
    for (int c : by_source.at(activation_source(v, n)))
      if (!taken.count(c) && !tried.count(c)) seeds.push_back(c);
    tried.insert(seeds.begin(), seeds.end());
    std::vector<int64_t> blocks(seeds.size(), 1);
    try {
      RegionEdits e;
      for (int attempt = 0;; ++attempt) {
        try {
          e = finder.find(seeds, blocks);
          break;
        } catch (const NeedBlocks& nb) {
          if (attempt >= 3 || blocks[static_cast<size_t>(nb.seed)] != 1)
            throw NotSplittable{seeds[static_cast<size_t>(nb.seed)], "split into blocks twice"};
          blocks[static_cast<size_t>(nb.seed)] = nb.blocks;
        }
      }
      bool overlaps = false;
      for (int m : e.nodes) overlaps = overlaps || taken.count(m);
      if (overlaps) throw NotSplittable{seeds[0], "overlaps a region already split"};
      taken.insert(e.nodes.begin(), e.nodes.end());
      result.applied.push_back("Sharded for tensor parallelism (rank " + std::to_string(tp.rank) + " of " +
                               std::to_string(tp.size) + "): column-parallel " + names(g, seeds) + ", row-parallel " +
                               names(g, e.row_parallel) + ", " + std::to_string(e.nodes.size()) + " nodes split");
      regions.push_back(std::move(e));
    } catch (const NotSplittable& ns) {
      const Node& at = v.node(ns.node);
      std::vector<std::string> set;
      for (int s : seeds) set.push_back(g.nodes()[static_cast<size_t>(s)].name);
      result.refused.push_back(RefusedMerge{
          ReasonCode::Replicated,
          "Left replicated: MatMul " + names(g, seeds) + ": node '" + at.name + "' (" + at.op_type + ") " + ns.why,
          "tensor_parallel", std::move(set)});
    }
  }
  apply(g, regions, tp, result);
  return result;
}

}  // namespace gaf
