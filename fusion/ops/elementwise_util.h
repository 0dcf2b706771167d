// Shared pieces of the elementwise families (unary.cpp, binary.cpp): registering a same-shape
// map or an n-ary numpy-broadcast map from one expression builder.
#pragma once

#include <functional>

#include "fusion/ops/op_builder.h"

namespace gaf {

using UnaryExpr = std::function<Halide::Expr(const BuildContext&, const Halide::Expr&)>;
using NaryExpr = std::function<Halide::Expr(const BuildContext&, const std::vector<Halide::Expr>&)>;
using DTypeRule = std::function<DType(const InferContext&)>;

// y = f(x), same shape; output dtype given by `out_dtype` (default: the input's).
void add_unary_op(OpRegistry& r, const std::string& name, UnaryExpr f, DTypeRule out_dtype = nullptr);

// y = f(x0, x1, ...) with numpy broadcasting over [min_inputs, max_inputs] inputs. The
// expressions passed to `f` are the inputs' element values at the output index.
void add_broadcast_op(OpRegistry& r, const std::string& name, int min_inputs, int max_inputs, NaryExpr f,
                      DTypeRule out_dtype = nullptr, bool same_dtype_inputs = true);

}  // namespace gaf
