// Trilu: the upper (upper = 1, default) or lower triangle of the last two axes, the rest zero;
// the optional input k (an int64 scalar, known at compile time) shifts the diagonal. PyTorch
// exports torch.triu / torch.tril with it, e.g. a causal mask built as full(-inf).triu(1); after
// folding such a mask is a constant, so this op mostly runs at load.
//
// Op class: Injective (each output element reads the input element at its own index, but which
// one it keeps depends on the index), like the layout ops.
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"

namespace gaf {

using namespace Halide;

namespace {

int64_t diagonal_offset(const InferContext& c) {
  if (!c.has_input(1)) return 0;
  const Tensor& k = c.value(1);
  c.check(k.numel() == 1 && k.dtype() == DType::Int64,
          "k must be one int64, got " + std::to_string(k.numel()) + " elements");
  return k.as_int(0);
}

}  // namespace

void register_trilu_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Trilu";
  s.op_class = OpClass::Injective;
  s.min_inputs = 1;
  s.max_inputs = 2;
  s.value_inputs = {1};
  s.infer = [](const InferContext& c) {
    c.check(c.rank(0) >= 2, "input must have rank >= 2, got " + shape_str(c.shape(0)));
    diagonal_offset(c);
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    std::vector<Var> v = b.vars(x.rank());
    const bool upper = b.attrs().get_int("upper", 1) != 0;
    // Element (i, j) of the last two axes is kept when j - i >= k (upper) or j - i <= k (lower).
    Expr d = cast<int64_t>(v[x.rank() - 1]) - cast<int64_t>(v[x.rank() - 2]);
    Expr k = Expr(static_cast<int64_t>(diagonal_offset(b.infer())));
    Expr keep = upper ? d >= k : d <= k;
    b.define_output(0, v, select(keep, x(v), cast(halide_type(x.dtype), 0)));
  };
  r.add(std::move(s));
}

}  // namespace gaf
