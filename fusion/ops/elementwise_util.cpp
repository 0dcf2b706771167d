#include "fusion/ops/elementwise_util.h"

namespace gaf {

using namespace Halide;

void add_unary_op(OpRegistry& r, const std::string& name, UnaryExpr f, DTypeRule out_dtype) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Elementwise;
  s.infer = [out_dtype](const InferContext& c) {
    return std::vector<TensorDesc>{{out_dtype ? out_dtype(c) : c.dtype(0), c.shape(0)}};
  };
  s.build = [f](BuildContext& b) {
    std::vector<Var> v = b.vars(b.in(0).rank());
    b.define_output(0, v, f(b, b.in(0)(v)));
  };
  r.add(std::move(s));
}

void add_broadcast_op(OpRegistry& r, const std::string& name, int min_inputs, int max_inputs, NaryExpr f,
                      DTypeRule out_dtype, bool same_dtype_inputs) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Broadcast;
  s.min_inputs = min_inputs;
  s.max_inputs = max_inputs;
  s.infer = [out_dtype, same_dtype_inputs](const InferContext& c) {
    std::vector<Shape> shapes;
    for (int i = 0; i < c.num_inputs(); ++i) {
      shapes.push_back(c.shape(i));
      if (same_dtype_inputs && c.dtype(i) != c.dtype(0))
        c.fail(std::string("input ") + std::to_string(i) + " has dtype " + dtype_name(c.dtype(i)) +
               " but input 0 has " + dtype_name(c.dtype(0)));
    }
    return std::vector<TensorDesc>{{out_dtype ? out_dtype(c) : c.dtype(0), broadcast_shapes(c, shapes)}};
  };
  s.build = [f](BuildContext& b) {
    std::vector<Var> v = b.vars(static_cast<int>(b.out_desc(0).shape.size()));
    std::vector<Expr> xs;
    for (int i = 0; i < b.num_inputs(); ++i) xs.push_back(b.broadcast_read(i, v));
    b.define_output(0, v, f(b, xs));
  };
  r.add(std::move(s));
}

}  // namespace gaf
