#include "fusion/ops/op_builder.h"

#include <cctype>
#include <cstring>

namespace gaf {

using namespace Halide;

Type halide_type(DType t) {
  switch (t) {
    case DType::Float32: return Float(32);
    case DType::Int64: return Int(64);
    case DType::Bool: return UInt(8);
    case DType::Float16: return Float(16);
    case DType::BFloat16: return BFloat(16);
    case DType::Int8: return Int(8);
    case DType::UInt8: return UInt(8);
    case DType::Int32: return Int(32);
  }
  return Float(32);
}

std::vector<Expr> halide_args(const std::vector<Expr>& onnx_idx) { return {onnx_idx.rbegin(), onnx_idx.rend()}; }
std::vector<Var> halide_args(const std::vector<Var>& onnx_idx) { return {onnx_idx.rbegin(), onnx_idx.rend()}; }

Expr TensorFunc::dim(int d) const {
  if (d < static_cast<int>(extents.size()) && extents[d].defined()) return extents[d];
  return Expr(static_cast<int32_t>(shape.at(d)));
}

std::vector<Expr> TensorFunc::dims() const {
  std::vector<Expr> e;
  for (int d = 0; d < rank(); ++d) e.push_back(dim(d));
  return e;
}

bool TensorFunc::is_static() const {
  for (const Expr& e : extents)
    if (e.defined() && !const_value(e)) return false;
  return true;
}

Expr fold(const Expr& e) { return Internal::simplify(e); }

Expr product(const std::vector<Expr>& extents) {
  Expr p = 1;
  for (const Expr& e : extents) p = p * e;
  return fold(p);
}

std::optional<int64_t> const_value(const Expr& e) {
  if (const int64_t* v = Internal::as_const_int(e)) return *v;
  if (const uint64_t* v = Internal::as_const_uint(e)) return static_cast<int64_t>(*v);
  return std::nullopt;
}

Expr TensorFunc::operator()(const std::vector<Expr>& idx) const {
  if (static_cast<int>(idx.size()) != rank())
    throw GafError("internal: tensor of rank " + std::to_string(rank()) + " indexed with " +
                   std::to_string(idx.size()) + " indices");
  return func(halide_args(idx));
}
Expr TensorFunc::operator()(const std::vector<Var>& idx) const {
  return (*this)(std::vector<Expr>(idx.begin(), idx.end()));
}

Expr as_bool(const Expr& e) { return e != cast(e.type(), 0); }
Expr from_bool(const Expr& cond) { return select(cond, cast<uint8_t>(1), cast<uint8_t>(0)); }

Expr broadcast_read(const TensorFunc& t, const std::vector<Var>& out_idx) {
  int r = t.rank(), R = static_cast<int>(out_idx.size());
  std::vector<Expr> idx;
  for (int d = 0; d < r; ++d) {
    int od = R - r + d;
    if (t.shape[d] == 1 || od < 0)
      idx.push_back(0);
    else
      idx.push_back(out_idx[od]);
  }
  return t(idx);
}

Shape broadcast_shapes(const InferContext& ctx, const std::vector<Shape>& shapes) {
  size_t R = 0;
  for (const Shape& s : shapes) R = std::max(R, s.size());
  Shape out(R, 1);
  for (const Shape& s : shapes)
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[R - s.size() + d];
      int64_t e = s[d];
      if (e == o || e == 1) continue;
      if (o == 1) {
        o = e;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
      ctx.fail("shapes " + all + " cannot be broadcast together");
    }
  return out;
}

static std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (o.empty() || std::isdigit(static_cast<unsigned char>(o[0]))) o = "n_" + o;
  return o;
}

BuildContext::BuildContext(const InferContext& infer, std::vector<TensorFunc> inputs, std::vector<TensorDesc> outputs,
                           std::vector<std::vector<Expr>> out_extents, std::vector<std::vector<Expr>> value_exprs)
    : infer_(infer),
      inputs_(std::move(inputs)),
      out_desc_(std::move(outputs)),
      out_extents_(std::move(out_extents)),
      value_exprs_(std::move(value_exprs)) {
  for (int i = 0; i < static_cast<int>(inputs_.size()); ++i) present_.push_back(infer.has_input(i));
  outputs_.resize(out_desc_.size());
  prefix_ = sanitize(infer.node().name);
}

const TensorFunc& BuildContext::in(int i) const {
  if (!has_input(i)) infer_.fail("input " + std::to_string(i) + " is required but absent");
  return inputs_[i];
}

bool BuildContext::has_out_extent(int i, int d) const {
  return i < static_cast<int>(out_extents_.size()) && d < static_cast<int>(out_extents_[i].size()) &&
         out_extents_[i][d].defined();
}

Expr BuildContext::out_dim(int i, int d) const {
  if (has_out_extent(i, d)) return out_extents_[i][d];
  return Expr(static_cast<int32_t>(out_desc_.at(i).shape.at(d)));
}

bool BuildContext::has_value_exprs(int i) const {
  return i < static_cast<int>(value_exprs_.size()) && !value_exprs_[i].empty();
}

Expr BuildContext::value_expr(int i, int64_t k) const {
  const Tensor& t = infer_.value(i);  // also checks that the input is a value input
  Type ty = is_float_dtype(t.dtype()) ? Float(32) : Int(64);
  if (has_value_exprs(i)) return cast(ty, value_exprs_[i].at(static_cast<size_t>(k)));
  return ty.is_float() ? Internal::make_const(ty, t.as_double(k)) : Internal::make_const(ty, t.as_int(k));
}

std::vector<Var> BuildContext::vars(int rank) const {
  std::vector<Var> v;
  for (int d = 0; d < rank; ++d) v.emplace_back(prefix_ + "_d" + std::to_string(d));
  return v;
}

void BuildContext::define_output(int i, const std::vector<Var>& v, const Expr& e) {
  Func f(prefix_ + "_out" + std::to_string(i));
  f(halide_args(v)) = cast(halide_type(out_desc_.at(i).dtype), e);
  set_output(i, f);
}

void BuildContext::set_output(int i, Func f) {
  std::vector<Expr> ext = i < static_cast<int>(out_extents_.size()) ? out_extents_[i] : std::vector<Expr>{};
  outputs_.at(i) = TensorFunc{f, out_desc_.at(i).dtype, out_desc_.at(i).shape, std::move(ext)};
}

Func BuildContext::stage(const std::string& suffix, StageRole role, std::vector<RVar> reduction, FlatLayout flat) {
  Func f(prefix_ + "_" + suffix + std::to_string(counter_++));
  stages_.push_back(Stage{f, role, std::move(reduction), flat});
  return f;
}

void BuildContext::add_stage(Func f, StageRole role, std::vector<RVar> reduction) {
  stages_.push_back(Stage{f, role, std::move(reduction)});
}

TensorFunc BuildContext::constant(const Tensor& t, const std::string& suffix) {
  // A Buffer owns a copy of the data so the pipeline stays valid after `t` is gone.
  std::vector<int> extents;
  for (auto it = t.shape().rbegin(); it != t.shape().rend(); ++it) extents.push_back(static_cast<int>(*it));
  Buffer<> buf(halide_type(t.dtype()), extents, prefix_ + "_" + suffix + "_buf");
  if (t.nbytes()) std::memcpy(buf.data(), t.raw(), t.nbytes());
  Func f(prefix_ + "_" + suffix + std::to_string(counter_++));
  std::vector<Var> v = vars(t.rank());
  std::vector<Expr> args(v.begin(), v.end());
  f(halide_args(v)) = buf(halide_args(args));
  return TensorFunc{f, t.dtype(), t.shape(), {}};
}

Expr BuildContext::broadcast_read(int i, const std::vector<Var>& out_idx) const {
  return gaf::broadcast_read(in(i), out_idx);
}

}  // namespace gaf
