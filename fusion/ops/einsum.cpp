// Einsum (opset 12): the product of the operands over every label, summed over the labels not
// in the output (fusion/ops/einsum_equation.h reads the equation).
//   out[output labels] = sum over contracted labels of prod_i X_i[its labels]
// An operand axis of extent 1 under a broadcast ellipsis label is read at 0; a label repeated in
// one term reads that operand's diagonal. Two-operand Einsums that are a (batched) product are
// rewritten into Transpose + MatMul at load (fusion/frontend/einsum_rewrite.h), so they run as
// MatMul tiles and join attention's patterns; this builder is every other case (and the
// reference). Op class: Opaque (runs as its own kernel).
#include "fusion/ops/einsum_equation.h"
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"

namespace gaf {

using namespace Halide;

namespace {

EinsumEquation equation_of(const InferContext& c) {
  c.check(c.attrs().has("equation"), "attribute 'equation' is required");
  std::vector<int> ranks;
  for (int i = 0; i < c.num_inputs(); ++i) ranks.push_back(c.rank(i));
  try {
    return EinsumEquation::parse(c.attrs().get_string("equation", ""), ranks);
  } catch (const GafError& e) {
    c.fail(e.what());
  }
}

std::vector<Shape> input_shapes(const InferContext& c) {
  std::vector<Shape> s;
  for (int i = 0; i < c.num_inputs(); ++i) s.push_back(c.shape(i));
  return s;
}

}  // namespace

void register_einsum_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Einsum";
  s.op_class = OpClass::Opaque;
  s.min_inputs = 1;
  s.max_inputs = 16;
  s.infer = [](const InferContext& c) {
    for (int i = 0; i < c.num_inputs(); ++i) {
      c.check(c.has_input(i), "operand " + std::to_string(i) + " is missing");
      c.check(c.dtype(i) == c.dtype(0), "operands must share one dtype: " + std::string(dtype_name(c.dtype(0))) +
                                            " and " + dtype_name(c.dtype(i)));
    }
    c.check(c.dtype(0) != DType::Bool, "operands must be numeric");
    const EinsumEquation e = equation_of(c);
    try {
      return std::vector<TensorDesc>{{c.dtype(0), e.output_shape(input_shapes(c))}};
    } catch (const GafError& err) {
      c.fail(err.what());
    }
  };
  s.build = [](BuildContext& b) {
    const InferContext& c = b.infer();
    const EinsumEquation e = equation_of(c);
    const std::vector<int64_t> ext = e.extents(input_shapes(c));
    const std::vector<int> summed = e.contracted();
    std::vector<Var> v = b.vars(static_cast<int>(e.output.size()));
    std::vector<Expr> at_label(e.labels.size());
    for (size_t d = 0; d < e.output.size(); ++d) at_label[e.index_of(e.output[d])] = v[d];
    // The summed labels as one RDom, the last-appearing label innermost.
    Region region;
    for (auto l = summed.rbegin(); l != summed.rend(); ++l)
      region.emplace_back(0, static_cast<int>(ext[e.index_of(*l)]));
    RDom red;
    if (!region.empty()) red = RDom(region, b.prefix() + "_r");
    for (size_t k = 0; k < summed.size(); ++k)
      at_label[e.index_of(summed[k])] = red[static_cast<int>(summed.size() - 1 - k)];
    Expr product;
    for (int i = 0; i < b.num_inputs(); ++i) {
      std::vector<Expr> idx;
      for (size_t d = 0; d < e.inputs[i].size(); ++d) {
        const int l = e.inputs[i][d];
        // An ellipsis axis of extent 1 broadcast against a longer one.
        idx.push_back(c.shape(i)[d] == 1 && ext[e.index_of(l)] != 1 ? Expr(0) : at_label[e.index_of(l)]);
      }
      Expr x = b.in(i)(idx);
      product = product.defined() ? product * x : x;
    }
    if (summed.empty()) {
      b.define_output(0, v, product);
      return;
    }
    std::vector<RVar> rvars;
    for (int i = 0; i < red.dimensions(); ++i) rvars.push_back(red[i]);
    const std::vector<Expr> at = halide_args(std::vector<Expr>(v.begin(), v.end()));
    Func sum = b.stage("sum", StageRole::Statistic, rvars);
    sum(at) = cast(product.type(), 0);
    sum(at) += product;
    b.define_output(0, v, sum(at));
  };
  r.add(std::move(s));
}

}  // namespace gaf
