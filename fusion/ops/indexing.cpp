// Indexing ops: Concat, Split, Slice, Gather (OpClass::Injective: each output element reads one
// input element; Gather's index is data-dependent and clamped so bounds inference stays inside the
// data buffer; out-of-range indices are refused by its check_inputs before a reference run).
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

using namespace Halide;

namespace {

// Per output axis: the input index is start + out_index * step.
struct AxisMap {
  int64_t start = 0, step = 1, count = 0;
};

// The builders' form of an AxisMap: the start may be symbolic (an int32 Expr, e.g. a Split
// offset after a seq-long part, or Slice's -1 counted from a symbolic end); the step is static.
struct AxisRead {
  Expr start;
  int64_t step = 1;
};

Expr strided_read(const TensorFunc& in, const std::vector<AxisRead>& m, const std::vector<Var>& v) {
  std::vector<Expr> idx;
  for (size_t d = 0; d < m.size(); ++d) {
    Expr e = v[d];
    if (m[d].step != 1) e = e * static_cast<int>(m[d].step);
    if (!is_const_zero(m[d].start)) e = e + m[d].start;
    idx.push_back(e);
  }
  return in(idx);
}

std::vector<AxisRead> static_reads(const std::vector<AxisMap>& m) {
  std::vector<AxisRead> r;
  for (const AxisMap& a : m) r.push_back({Expr(static_cast<int32_t>(a.start)), a.step});
  return r;
}

std::vector<AxisMap> identity_map(const Shape& s) {
  std::vector<AxisMap> m;
  for (int64_t d : s) m.push_back({0, 1, d});
  return m;
}

Shape counts(const std::vector<AxisMap>& m) {
  Shape s;
  for (const AxisMap& a : m) s.push_back(a.count);
  return s;
}

// ---- Concat ----------------------------------------------------------------------------------

void add_concat(OpRegistry& r) {
  OpSchema s;
  s.name = "Concat";
  s.split_rule = OpSchema::SplitRule::Concat;
  s.op_class = OpClass::Injective;
  s.max_inputs = 1 << 20;
  s.infer = [](const InferContext& c) {
    c.check(c.attrs().has("axis"), "needs the 'axis' attribute");
    int axis = c.axis(c.attrs().get_int("axis", 0), c.rank(0));
    Shape out = c.shape(0);
    for (int i = 1; i < c.num_inputs(); ++i) {
      const Shape& si = c.shape(i);
      bool ok = c.dtype(i) == c.dtype(0) && si.size() == out.size();
      for (size_t d = 0; ok && d < si.size(); ++d) ok = static_cast<int>(d) == axis || si[d] == out[d];
      c.check(ok, "input " + std::to_string(i) + " (" + dtype_name(c.dtype(i)) + shape_str(si) +
                      ") does not match input 0 (" + dtype_name(c.dtype(0)) + shape_str(c.shape(0)) +
                      ") outside axis " + std::to_string(axis));
      out[axis] += si[axis];
    }
    return std::vector<TensorDesc>{{c.dtype(0), out}};
  };
  s.build = [](BuildContext& b) {
    int axis = b.infer().axis(b.attrs().get_int("axis", 0), b.in(0).rank());
    std::vector<Var> v = b.vars(b.in(0).rank());
    std::vector<Expr> offset{0};  // where each input starts along the axis (folded: constants when static)
    for (int i = 0; i < b.num_inputs(); ++i) offset.push_back(fold(offset.back() + b.in(i).dim(axis)));
    // Select chain from the last input back; every branch is evaluated (vector blends), so each
    // read is clamped into its own input. Zero-size inputs are never read.
    Expr e;
    for (int i = b.num_inputs() - 1; i >= 0; --i) {
      if (b.in(i).shape[axis] == 0) continue;
      std::vector<Expr> idx(v.begin(), v.end());
      idx[axis] = clamp(v[axis] - offset[i], 0, fold(b.in(i).dim(axis) - 1));
      Expr read = b.in(i)(idx);
      e = e.defined() ? select(v[axis] < offset[i + 1], read, e) : read;
    }
    if (!e.defined()) e = cast(halide_type(b.in(0).dtype), 0);  // empty output, never run
    b.define_output(0, v, e);
  };
  r.add(std::move(s));
}

// ---- Split -----------------------------------------------------------------------------------

std::vector<int64_t> split_sizes(const InferContext& c, int axis) {
  int64_t dim = c.shape(0)[axis];
  std::vector<int64_t> sizes;
  if (c.has_input(1))
    sizes = c.value(1).to_int_vector();  // opset 13+
  else if (c.attrs().has("split"))
    sizes = c.attrs().get_ints("split", {});  // opset < 13
  if (!sizes.empty()) {
    int64_t total = 0;
    for (int64_t n : sizes) {
      c.check(n >= 0, "negative split size " + std::to_string(n));
      total += n;
    }
    c.check(static_cast<int>(sizes.size()) == c.num_outputs(),
            std::to_string(sizes.size()) + " split sizes for " + std::to_string(c.num_outputs()) + " outputs");
    c.check(total == dim, "split sizes sum to " + std::to_string(total) + " but axis " + std::to_string(axis) +
                              " has size " + std::to_string(dim));
    return sizes;
  }
  int64_t parts = c.attrs().get_int("num_outputs", c.num_outputs());
  c.check(parts == c.num_outputs(), "num_outputs is " + std::to_string(parts) + " but the node has " +
                                        std::to_string(c.num_outputs()) + " outputs");
  // Equal parts; opset 18 allows the last one to be smaller (ceil-sized chunks).
  int64_t chunk = (dim + parts - 1) / parts;
  c.check(dim % parts == 0 || c.attrs().get_int("_opset", 13) >= 18,
          "axis of size " + std::to_string(dim) + " cannot be split into " + std::to_string(parts) + " equal parts");
  sizes.assign(parts, chunk);
  sizes.back() = dim - chunk * (parts - 1);
  c.check(sizes.back() >= 0,
          "axis of size " + std::to_string(dim) + " cannot be split into " + std::to_string(parts) + " parts");
  return sizes;
}

// One AxisMap set per output.
std::vector<std::vector<AxisMap>> split_maps(const InferContext& c) {
  int axis = c.axis(c.attrs().get_int("axis", 0), c.rank(0));
  std::vector<std::vector<AxisMap>> maps;
  int64_t off = 0;
  for (int64_t n : split_sizes(c, axis)) {
    std::vector<AxisMap> m = identity_map(c.shape(0));
    m[axis] = {off, 1, n};
    off += n;
    maps.push_back(m);
  }
  return maps;
}

int split_axis(const InferContext& c) { return c.axis(c.attrs().get_int("axis", 0), c.rank(0)); }

// Where each output starts along the split axis, as int32 Exprs: the running sum of the sizes
// from input 1 (value_expr: possibly symbolic) or the attribute, else of equal ceil-sized chunks
// of the (possibly symbolic) axis. Folded, so constants when static.
std::vector<Expr> split_starts(const BuildContext& b) {
  const InferContext& c = b.infer();
  int parts = c.num_outputs();
  std::vector<Expr> starts{0};
  // The same precedence as split_sizes: input 1, else the attribute; none (or empty) = equal parts.
  std::vector<int64_t> sizes = c.has_input(1) ? c.value(1).to_int_vector() : c.attrs().get_ints("split", {});
  if (!sizes.empty()) {
    for (int k = 0; k + 1 < parts; ++k) {
      Expr n = c.has_input(1) ? cast<int32_t>(b.value_expr(1, k)) : Expr(static_cast<int32_t>(sizes[k]));
      starts.push_back(fold(starts.back() + n));
    }
  } else {
    Expr dim = b.in(0).dim(split_axis(c));
    Expr chunk = fold((dim + (parts - 1)) / parts);
    for (int k = 1; k < parts; ++k) starts.push_back(fold(chunk * k));
  }
  return starts;
}

void add_split(OpRegistry& r) {
  OpSchema s;
  s.name = "Split";
  s.split_rule = OpSchema::SplitRule::Split;
  s.op_class = OpClass::Injective;
  s.max_inputs = 2;
  s.max_outputs = 1 << 20;
  s.value_inputs = {1};
  s.infer = [](const InferContext& c) {
    std::vector<TensorDesc> out;
    for (const auto& m : split_maps(c)) out.push_back({c.dtype(0), counts(m)});
    return out;
  };
  s.build = [](BuildContext& b) {
    std::vector<std::vector<AxisMap>> maps = split_maps(b.infer());
    std::vector<Var> v = b.vars(b.in(0).rank());
    std::vector<Expr> starts = split_starts(b);
    for (int k = 0; k < b.num_outputs(); ++k) {
      std::vector<AxisRead> m = static_reads(maps[k]);
      m[split_axis(b.infer())].start = starts[k];
      b.define_output(k, v, strided_read(b.in(0), m, v));
    }
  };
  r.add(std::move(s));
}

// ---- Slice -----------------------------------------------------------------------------------

std::vector<AxisMap> slice_maps(const InferContext& c) {
  const Shape& in = c.shape(0);
  int rank = c.rank(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.num_inputs() >= 2) {  // opset 10+: everything comes as (constant) inputs
    starts = c.value(1).to_int_vector();
    ends = c.value(2).to_int_vector();
    if (c.has_input(3)) axes = c.value(3).to_int_vector();
    if (c.has_input(4)) steps = c.value(4).to_int_vector();
  } else {
    starts = c.attrs().get_ints("starts", {});
    ends = c.attrs().get_ints("ends", {});
    axes = c.attrs().get_ints("axes", {});
  }
  c.check(starts.size() == ends.size(), "starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  c.check(axes.size() == starts.size() && steps.size() == starts.size(),
          "starts, ends, axes and steps differ in length");
  std::vector<AxisMap> m = identity_map(in);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = c.axis(axes[i], rank);
    c.check(!seen[ax], "axis " + std::to_string(axes[i]) + " is repeated");
    seen[ax] = true;
    int64_t dim = in[ax], step = steps[i];
    c.check(step != 0, "step must not be 0");
    if (dim == 0) {
      m[ax] = {0, 1, 0};
      continue;
    }
    // ONNX clamping: negative positions count from the end, then clamp into [0, dim] for
    // forward steps and [-1, dim-1] for backward ones (-1 = before the first element).
    auto resolve = [&](int64_t p, int64_t lo, int64_t hi) { return std::clamp(p < 0 ? p + dim : p, lo, hi); };
    int64_t start = resolve(starts[i], 0, step > 0 ? dim : dim - 1);
    int64_t end = resolve(ends[i], step > 0 ? 0 : -1, step > 0 ? dim : dim - 1);
    int64_t span = step > 0 ? end - start : start - end;
    int64_t n = span <= 0 ? 0 : (span - 1) / (step > 0 ? step : -step) + 1;
    // A single element needs no stride (and a huge step would not fit Halide's int32 index).
    m[ax] = {start, n <= 1 ? 1 : step, n};
  }
  return m;
}

// ONNX's start position p (negative counts from the end) clamped into [0, dim] for a forward
// step, [0, dim - 1] for a backward one, with a symbolic dim or p. p is int64 (value_expr) and may
// be far outside int32 (INT64_MIN); clamping it into int32 first gives the same result for any
// int32 dim. Only the start enters the read index: the end only sets the output's extent.
Expr slice_start(const Expr& p64, const Expr& dim, bool forward) {
  const int64_t lim = std::numeric_limits<int32_t>::max();
  Expr p = cast<int32_t>(clamp(p64, Expr(-lim), Expr(lim)));
  return fold(clamp(select(p < 0, p + dim, p), 0, forward ? dim : max(dim - 1, 0)));
}

// Recomputes the starts of `reads` from the (possibly symbolic) input extents and starts.
void slice_symbolic_starts(const BuildContext& b, std::vector<AxisRead>& reads) {
  const InferContext& c = b.infer();
  int rank = b.in(0).rank();
  std::vector<int64_t> axes, steps;
  int64_t n = 0;
  bool from_inputs = c.num_inputs() >= 2;  // opset 10+; else attributes (constants)
  std::vector<int64_t> attr_starts = c.attrs().get_ints("starts", {});
  if (from_inputs) {
    n = c.value(1).numel();
    if (c.has_input(3)) axes = c.value(3).to_int_vector();
    if (c.has_input(4)) steps = c.value(4).to_int_vector();
  } else {
    n = static_cast<int64_t>(attr_starts.size());
    axes = c.attrs().get_ints("axes", {});
  }
  for (int64_t i = 0; i < n; ++i) {
    int ax = axes.empty() ? static_cast<int>(i) : c.axis(axes[i], rank);
    if (b.in(0).shape[ax] == 0) continue;  // empty output
    int64_t step = steps.empty() ? 1 : steps[i];
    Expr p = from_inputs ? b.value_expr(1, i) : Expr(attr_starts[i]);
    reads[ax].start = slice_start(p, b.in(0).dim(ax), step > 0);
    // slice_maps drops the step of a single-element slice (a huge step would not fit int32);
    // at other sizes the slice may hold more, so keep a step that fits.
    if (std::abs(step) <= std::numeric_limits<int32_t>::max()) reads[ax].step = step;
  }
}

void add_slice(OpRegistry& r) {
  OpSchema s;
  s.name = "Slice";
  s.split_rule = OpSchema::SplitRule::Slice;
  s.op_class = OpClass::Injective;
  s.max_inputs = 5;
  s.value_inputs = {1, 2, 3, 4};
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{c.dtype(0), counts(slice_maps(c))}}; };
  s.build = [](BuildContext& b) {
    std::vector<AxisMap> m = slice_maps(b.infer());
    std::vector<Var> v = b.vars(b.in(0).rank());
    std::vector<AxisRead> reads = static_reads(m);
    if (!b.in(0).is_static() || b.has_value_exprs(1)) slice_symbolic_starts(b, reads);
    b.define_output(0, v, strided_read(b.in(0), reads, v));
  };
  r.add(std::move(s));
}

// ---- Gather ----------------------------------------------------------------------------------

void add_gather(OpRegistry& r) {
  OpSchema s;
  s.name = "Gather";
  s.split_rule = OpSchema::SplitRule::Gather;
  s.op_class = OpClass::Injective;
  s.min_inputs = s.max_inputs = 2;
  s.infer = [](const InferContext& c) {
    c.check(c.rank(0) >= 1, "data must have rank >= 1, got a scalar");
    int axis = c.axis(c.attrs().get_int("axis", 0), c.rank(0));
    c.check(c.dtype(1) == DType::Int64, std::string("indices must be int64, got ") + dtype_name(c.dtype(1)));
    const Shape& d = c.shape(0);
    Shape out(d.begin(), d.begin() + axis);
    out.insert(out.end(), c.shape(1).begin(), c.shape(1).end());
    out.insert(out.end(), d.begin() + axis + 1, d.end());
    return std::vector<TensorDesc>{{c.dtype(0), out}};
  };
  s.build = [](BuildContext& b) {
    const TensorFunc &data = b.in(0), &ind = b.in(1);
    int axis = b.infer().axis(b.attrs().get_int("axis", 0), data.rank());
    int q = ind.rank();
    int64_t dim = data.shape[axis];
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    if (dim == 0) {  // then the output is empty too, never run
      b.define_output(0, v, cast(halide_type(data.dtype), 0));
      return;
    }
    Expr i = ind(std::vector<Var>(v.begin() + axis, v.begin() + axis + q));
    // The axis' extent in the index type: a constant when static (as it always was).
    Expr d = data.dim(axis);
    std::optional<int64_t> dc = const_value(d);
    Expr n = dc ? Internal::make_const(i.type(), *dc) : cast(i.type(), d);
    i = select(i < 0, i + n, i);  // negative indices count from the end
    // Out-of-range indices are invalid ONNX; clamping keeps the read inside the buffer.
    i = cast<int>(clamp(i, Internal::make_const(i.type(), 0), n - 1));
    std::vector<Expr> idx(v.begin(), v.begin() + axis);
    idx.push_back(i);
    idx.insert(idx.end(), v.begin() + axis + q, v.end());
    b.define_output(0, v, data(idx));
  };
  // ONNX makes an index outside [-n, n) an error; the algorithm clamps (so that bounds
  // inference stays inside the buffer), so the executors check first (OpSchema::index_input).
  s.index_input = OpSchema::IndexInput{1, 0, "axis"};
  r.add(std::move(s));
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  add_concat(r);
  add_split(r);
  add_slice(r);
  add_gather(r);
}

}  // namespace gaf
