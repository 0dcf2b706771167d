// Layout ops: Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Expand, DepthToSpace, SpaceToDepth.
// Each output element reads exactly one input element (OpClass::Injective).
#include <algorithm>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

using namespace Halide;

namespace {

// Input read for an output of extents `out` holding the same row-major elements as `in` (Reshape
// and friends). The dims are split into the shortest groups whose products agree; within a group
// the output index is flattened and decomposed into input indices. A dim that is only inserted or
// removed (size 1) or kept unchanged thus maps directly, with no division. With symbolic extents
// a group closes only when its products are provably equal for every value of the symbols (the
// representative shapes alone could pair [S, 4] with [4, S] at S = 4); otherwise it grows, which
// costs divisions but stays correct.
Expr reshape_read(const TensorFunc& in, const Shape& out_shape, const std::vector<Expr>& out,
                  const std::vector<Var>& v) {
  if (shape_numel(in.shape) == 0) return cast(halide_type(in.dtype), 0);  // output is skipped
  const Shape& is = in.shape;
  int ni = in.rank(), no = static_cast<int>(out_shape.size());
  std::vector<Expr> idx(ni);
  int i = 0, j = 0;
  while (i < ni || j < no) {
    std::vector<int> gi, go;
    int64_t pi = 1, po = 1;  // representative products decide which side grows
    Expr ei = 1, eo = 1;     // true products decide where the group closes
    do {
      if ((pi <= po && i < ni) || j >= no) {
        gi.push_back(i);
        ei = ei * in.dim(i);
        pi *= is[i++];
      } else {
        go.push_back(j);
        eo = eo * out[j];
        po *= out_shape[j++];
      }
    } while ((pi != po || !Internal::can_prove(ei == eo)) && (i < ni || j < no));
    Expr flat = 0;
    for (int d : go) flat = flat * out[d] + v[d];
    for (size_t k = 0; k < gi.size(); ++k) {
      // stride of input dim gi[k] within the group: the product of the dims after it
      std::vector<Expr> inner;
      for (size_t l = k + 1; l < gi.size(); ++l) inner.push_back(in.dim(gi[l]));
      Expr stride = product(inner);
      Expr e = is_const_one(stride) ? flat : flat / stride;
      idx[gi[k]] = k == 0 ? e : e % in.dim(gi[k]);
    }
  }
  return in(idx);
}

// The output extents of a reshape-like op from its input's extents (and value inputs): what the
// index arithmetic uses when the caller did not give the output's extents.
using ExtentRule = std::function<std::vector<Expr>(const BuildContext&)>;

// Registers a reshape-like op: the output is input 0 with the shape `infer_shape` gives, of
// extents `extents` gives.
void add_reshape_like(OpRegistry& r, const std::string& name, int max_inputs, std::vector<int> value_inputs,
                      std::function<Shape(const InferContext&)> infer_shape, ExtentRule extents) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Injective;
  s.split_rule = OpSchema::SplitRule::Reshape;
  s.max_inputs = max_inputs;
  s.value_inputs = std::move(value_inputs);
  s.infer = [infer_shape](const InferContext& c) {
    Shape out = infer_shape(c);
    c.check(shape_numel(out) == shape_numel(c.shape(0)),
            "cannot reshape " + shape_str(c.shape(0)) + " to " + shape_str(out));
    return std::vector<TensorDesc>{{c.dtype(0), out}};
  };
  s.build = [extents](BuildContext& b) {
    const Shape& out = b.out_desc(0).shape;
    std::vector<Expr> ext;
    if (b.in(0).is_static() && !b.has_value_exprs(1)) {
      for (int d = 0; d < static_cast<int>(out.size()); ++d) ext.push_back(b.out_dim(0, d));
    } else {
      ext = extents(b);
      for (int d = 0; d < static_cast<int>(out.size()); ++d)
        if (b.has_out_extent(0, d)) ext[d] = b.out_dim(0, d);  // the caller's form, if given
    }
    std::vector<Var> v = b.vars(static_cast<int>(out.size()));
    b.define_output(0, v, reshape_read(b.in(0), out, ext, v));
  };
  r.add(std::move(s));
}

// Axes from value input 1 (opset 13+) or the 'axes' attribute (older opsets); empty if neither.
std::vector<int64_t> axes_arg(const InferContext& c) {
  if (c.has_input(1)) return c.value(1).to_int_vector();
  return c.attrs().get_ints("axes", {});
}

Shape reshape_shape(const InferContext& c) {
  // Opset < 5 carried the target shape as an attribute.
  c.check(c.has_input(1) || c.attrs().has("shape"), "needs a target shape (input 1)");
  std::vector<int64_t> target = c.has_input(1) ? c.value(1).to_int_vector() : c.attrs().get_ints("shape", {});
  bool allowzero = c.attrs().get_int("allowzero", 0) != 0;
  const Shape& in = c.shape(0);
  Shape out;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      c.check(i < in.size(),
              "shape entry " + std::to_string(i) + " is 0 (copy) but the input has rank " + std::to_string(in.size()));
      d = in[i];
    } else if (d == -1) {
      c.check(infer_at < 0, "more than one -1 in the target shape");
      infer_at = static_cast<int>(i);
      out.push_back(-1);
      continue;
    }
    c.check(d >= 0, "invalid target dim " + std::to_string(d));
    c.check(!__builtin_mul_overflow(known, d, &known), "the target shape's size does not fit in 64 bits");
    out.push_back(d);
  }
  if (infer_at >= 0) {
    int64_t n = shape_numel(in);
    c.check(known > 0 && n % known == 0, "cannot reshape " + shape_str(in) +
                                             " to a shape with -1 and known dims of product " + std::to_string(known));
    out[infer_at] = n / known;
  }
  return out;
}

// Reshape's target extents: entry 0 copies the input's dim, -1 takes what is left.
std::vector<Expr> reshape_extents(const BuildContext& b) {
  const InferContext& c = b.infer();
  const TensorFunc& in = b.in(0);
  bool allowzero = c.attrs().get_int("allowzero", 0) != 0;
  int n = static_cast<int>(b.out_desc(0).shape.size());
  std::vector<Expr> out(n);
  int infer_at = -1;
  for (int i = 0; i < n; ++i) {
    // The entry's role (0, -1 or a size) is read from the representative contents; its value
    // from value_expr (symbolic when the shape tensor is computed from e.g. seq).
    int64_t rep = c.has_input(1) ? c.value(1).as_int(i) : c.attrs().get_ints("shape", {}).at(i);
    if (rep == 0 && !allowzero)
      out[i] = in.dim(i);
    else if (rep == -1)
      infer_at = i;
    else
      out[i] = c.has_input(1) ? fold(cast<int32_t>(b.value_expr(1, i))) : Expr(static_cast<int32_t>(rep));
  }
  if (infer_at >= 0) {
    std::vector<Expr> known;
    for (int i = 0; i < n; ++i)
      if (i != infer_at) known.push_back(out[i]);
    out[infer_at] = fold(product(in.dims()) / max(product(known), 1));
  }
  return out;
}

std::vector<Expr> flatten_extents(const BuildContext& b) {
  const TensorFunc& in = b.in(0);
  int64_t a = b.attrs().get_int("axis", 1);
  if (a < 0) a += in.rank();
  std::vector<Expr> d = in.dims();
  return {product({d.begin(), d.begin() + a}), product({d.begin() + a, d.end()})};
}

// Squeeze and Unsqueeze only drop or insert 1s: the output's extents are the input's non-unit
// ones in order, with 1 where the output's shape has a 1 (a symbolic dim is never 1 in the
// representative shape, see TensorFunc).
std::vector<Expr> unit_change_extents(const BuildContext& b) {
  const TensorFunc& in = b.in(0);
  const Shape& out = b.out_desc(0).shape;
  std::vector<Expr> kept;
  for (int d = 0; d < in.rank(); ++d)
    if (in.shape[d] != 1) kept.push_back(in.dim(d));
  std::vector<Expr> e;
  size_t k = 0;
  for (int64_t d : out) e.push_back(d == 1 ? Expr(1) : kept.at(k++));
  return e;
}

Shape flatten_shape(const InferContext& c) {
  int rank = c.rank(0);
  int64_t a = c.attrs().get_int("axis", 1);
  if (a < 0) a += rank;
  c.check(a >= 0 && a <= rank, "axis out of range for rank " + std::to_string(rank));
  const Shape& in = c.shape(0);
  Shape outer(in.begin(), in.begin() + a), inner(in.begin() + a, in.end());
  return {shape_numel(outer), shape_numel(inner)};
}

Shape squeeze_shape(const InferContext& c) {
  const Shape& in = c.shape(0);
  std::vector<bool> drop(in.size(), false);
  std::vector<int64_t> axes = axes_arg(c);
  for (int64_t a : axes) {
    int ax = c.axis(a, c.rank(0));
    c.check(in[ax] == 1, "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in[ax]));
    drop[ax] = true;
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!(axes.empty() ? in[d] == 1 : drop[d])) out.push_back(in[d]);
  return out;
}

Shape unsqueeze_shape(const InferContext& c) {
  std::vector<int64_t> axes = axes_arg(c);
  c.check(!axes.empty(), "needs axes");
  int out_rank = c.rank(0) + static_cast<int>(axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) {
    int ax = c.axis(a, out_rank);
    c.check(!inserted[ax], "axis " + std::to_string(a) + " is repeated");
    inserted[ax] = true;
  }
  Shape out;
  size_t k = 0;
  for (int d = 0; d < out_rank; ++d) out.push_back(inserted[d] ? 1 : c.shape(0)[k++]);
  return out;
}

}  // namespace

std::vector<int> transpose_perm(const InferContext& c) {
  int rank = c.rank(0);
  std::vector<int64_t> p = c.attrs().get_ints("perm", {});
  if (!c.attrs().has("perm"))
    for (int d = rank - 1; d >= 0; --d) p.push_back(d);
  c.check(static_cast<int>(p.size()) == rank,
          "perm has " + std::to_string(p.size()) + " entries for rank " + std::to_string(rank));
  std::vector<int> perm;
  std::vector<bool> seen(rank, false);
  for (int64_t a : p) {
    int ax = c.axis(a, rank);
    c.check(!seen[ax], "perm is not a permutation");
    seen[ax] = true;
    perm.push_back(ax);
  }
  return perm;
}

namespace {

void add_transpose(OpRegistry& r) {
  OpSchema s;
  s.name = "Transpose";
  s.split_rule = OpSchema::SplitRule::Transpose;
  s.op_class = OpClass::Injective;
  s.infer = [](const InferContext& c) {
    Shape out;
    for (int p : transpose_perm(c)) out.push_back(c.shape(0)[p]);
    return std::vector<TensorDesc>{{c.dtype(0), out}};
  };
  s.build = [](BuildContext& b) {
    std::vector<int> perm = transpose_perm(b.infer());
    std::vector<Var> v = b.vars(static_cast<int>(perm.size()));
    std::vector<Expr> idx(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) idx[perm[d]] = v[d];
    b.define_output(0, v, b.in(0)(idx));
  };
  r.add(std::move(s));
}

void add_expand(OpRegistry& r) {
  OpSchema s;
  s.name = "Expand";
  s.split_rule = OpSchema::SplitRule::Expand;
  s.op_class = OpClass::Injective;
  s.min_inputs = s.max_inputs = 2;
  s.value_inputs = {1};
  s.infer = [](const InferContext& c) {
    Shape target = c.value(1).to_int_vector();
    return std::vector<TensorDesc>{{c.dtype(0), broadcast_shapes(c, {c.shape(0), target})}};
  };
  s.build = [](BuildContext& b) {
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    b.define_output(0, v, b.broadcast_read(0, v));
  };
  r.add(std::move(s));
}

// DepthToSpace (blocksize b, mode DCR or CRD) and SpaceToDepth (b) on [N, C, H, W]: channels
// moved into b x b blocks of pixels and back. With C' = C / b^2, output (n, c, h*b + i, w*b + j)
// of DepthToSpace reads input channel (i*b + j)*C' + c (DCR, the default) or c*b*b + i*b + j
// (CRD); output (n, (i*b + j)*C + c, h, w) of SpaceToDepth reads input (n, c, h*b + i, w*b + j).
int64_t blocksize(const InferContext& c) {
  c.check(c.rank(0) == 4, "input " + shape_str(c.shape(0)) + " must be [N, C, H, W]");
  const int64_t b = c.attrs().get_int("blocksize", 0);
  c.check(b >= 1, "blocksize=" + std::to_string(b) + " must be positive");
  return b;
}

void add_depth_to_space(OpRegistry& r) {
  OpSchema s;
  s.name = "DepthToSpace";
  s.op_class = OpClass::Injective;
  s.infer = [](const InferContext& c) {
    const int64_t b = blocksize(c);
    const Shape& x = c.shape(0);
    const std::string mode = c.attrs().get_string("mode", "DCR");
    c.check(mode == "DCR" || mode == "CRD", "unsupported attribute mode=" + mode + " (DCR or CRD)");
    c.check(x[1] % (b * b) == 0,
            "channels " + std::to_string(x[1]) + " must be a multiple of blocksize^2 = " + std::to_string(b * b));
    return std::vector<TensorDesc>{{c.dtype(0), Shape{x[0], x[1] / (b * b), x[2] * b, x[3] * b}}};
  };
  s.build = [](BuildContext& b) {
    const int bs = static_cast<int>(blocksize(b.infer()));
    const int channels = static_cast<int>(b.out_desc(0).shape[1]);
    std::vector<Var> v = b.vars(4);
    Expr i = v[2] % bs, j = v[3] % bs;
    Expr c =
        b.attrs().get_string("mode", "DCR") == "DCR" ? (i * bs + j) * channels + v[1] : v[1] * (bs * bs) + i * bs + j;
    b.define_output(0, v, b.in(0)({Expr(v[0]), c, v[2] / bs, v[3] / bs}));
  };
  r.add(std::move(s));
}

void add_space_to_depth(OpRegistry& r) {
  OpSchema s;
  s.name = "SpaceToDepth";
  s.op_class = OpClass::Injective;
  s.infer = [](const InferContext& c) {
    const int64_t b = blocksize(c);
    const Shape& x = c.shape(0);
    c.check(x[2] % b == 0 && x[3] % b == 0,
            "height and width " + shape_str(x) + " must be multiples of blocksize=" + std::to_string(b));
    return std::vector<TensorDesc>{{c.dtype(0), Shape{x[0], x[1] * b * b, x[2] / b, x[3] / b}}};
  };
  s.build = [](BuildContext& b) {
    const int bs = static_cast<int>(blocksize(b.infer()));
    const int channels = static_cast<int>(b.in(0).shape[1]);
    std::vector<Var> v = b.vars(4);
    Expr block = v[1] / channels, c = v[1] % channels;
    b.define_output(0, v, b.in(0)({Expr(v[0]), c, v[2] * bs + block / bs, v[3] * bs + block % bs}));
  };
  r.add(std::move(s));
}

}  // namespace

void register_layout_ops(OpRegistry& r) {
  add_transpose(r);
  add_expand(r);
  add_reshape_like(r, "Reshape", 2, {1}, reshape_shape, reshape_extents);
  add_reshape_like(r, "Flatten", 1, {}, flatten_shape, flatten_extents);
  add_reshape_like(r, "Squeeze", 2, {1}, squeeze_shape, unit_change_extents);
  add_reshape_like(r, "Unsqueeze", 2, {1}, unsqueeze_shape, unit_change_extents);
  add_depth_to_space(r);
  add_space_to_depth(r);
}

}  // namespace gaf
