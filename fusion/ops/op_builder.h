// The Halide side of an op: a BuildContext hands the builder its inputs as Funcs indexed in ONNX
// order (outermost axis first) and takes back the output Funcs. Halide's own argument order is the
// reverse (innermost first), which TensorFunc hides. Only op family files and generators include
// this header (it pulls in Halide.h).
#pragma once

#include <Halide.h>

#include <optional>
#include <string>
#include <vector>

#include "fusion/ops/registry.h"

namespace gaf {

Halide::Type halide_type(DType t);

// A tensor as a Halide Func. func(rev(idx)) is element idx (ONNX order). Bool tensors hold uint8.
//
// Symbolic (runtime) extents: `extents` (ONNX order, int32 Exprs, e.g. of a Param<int32_t> `seq`)
// are the tensor's true extents; `shape` is then a representative value, good only for static
// decisions that cannot change results (rank, which dims are 1 for broadcasting, schedule
// choices). Anything that enters computed values (RDom extents, index arithmetic, counts) must
// read dim(d). Empty `extents` (or an undefined entry) means shape[d] is the extent.
struct TensorFunc {
  Halide::Func func;
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<Halide::Expr> extents;

  int rank() const { return static_cast<int>(shape.size()); }
  // Extent of axis d: extents[d] when given, else the constant shape[d] (an int32 IntImm, so the
  // static path builds exactly the algorithm it always did).
  Halide::Expr dim(int d) const;
  // dim(d) for every axis.
  std::vector<Halide::Expr> dims() const;
  // True when every extent is a compile-time constant.
  bool is_static() const;
  bool defined() const { return func.defined(); }
  Halide::Expr operator()(const std::vector<Halide::Expr>& idx) const;
  Halide::Expr operator()(const std::vector<Halide::Var>& idx) const;
};

// The role of an intermediate Func inside one op's algorithm; schedules read it (e.g. a
// reduction's statistics are computed at the row loop, a MatMul accumulator at the output tile).
// Operand: a MatMul operand as the accumulator reads it (inlined on the host, the staging copies
// of the NPU schedule). RowValues: elementwise values of a row that both a row statistic and the
// output read (Softmax's exponentials): a schedule may compute them once per row where the
// row's statistics are; left alone they are inlined into both readers.
enum class StageRole { Pointwise, Statistic, Accumulator, Constant, Operand, RowValues };

// The flat form of a 2-D Conv (fusion/ops/conv.cpp): output position (y, x) is p = y * pitch + x,
// and the operand holds the input split into stride_y x stride_x phases of that pitch.
struct FlatLayout {
  int64_t pitch = 0;  // 0: not flat
  int64_t phases = 1;
  int64_t group_outputs = 0;  // output channels per group (depthwise: 1): they read their group's inputs only
  // A 1x1 Conv without padding: the operand reads X only at the output's positions, so it needs
  // no border, and no tile may run past the last output row (X would be read past its end).
  bool exact = false;
  // ... and at unit stride its flat rows are X's rows: the operand is X read in place, no copy.
  bool in_place = false;
};

struct Stage {
  Halide::Func func;
  StageRole role = StageRole::Pointwise;
  // For reductions: the RDom vars the update runs over (innermost last). For matmul, k.
  std::vector<Halide::RVar> reduction;
  // A Conv's flat accumulator and operand (conv.cpp): the spatial axes as one. Default: not flat.
  FlatLayout flat;
};

class BuildContext {
 public:
  // `out_extents[i]`: output i's extents (ONNX order, same convention as TensorFunc::extents;
  // missing or empty = static). `value_exprs[i]`: for a value input whose contents are symbolic,
  // one Expr per element of the flattened tensor (empty = the concrete infer().value(i)).
  BuildContext(const InferContext& infer, std::vector<TensorFunc> inputs, std::vector<TensorDesc> outputs,
               std::vector<std::vector<Halide::Expr>> out_extents = {},
               std::vector<std::vector<Halide::Expr>> value_exprs = {});

  const InferContext& infer() const { return infer_; }
  const Attributes& attrs() const { return infer_.attrs(); }
  const Node& node() const { return infer_.node(); }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && present_[i]; }
  const TensorFunc& in(int i) const;
  const TensorDesc& out_desc(int i) const { return out_desc_.at(i); }
  int num_outputs() const { return static_cast<int>(out_desc_.size()); }
  // Extent of axis d of output i: out_extents[i][d] when given, else out_desc(i).shape[d].
  Halide::Expr out_dim(int i, int d) const;
  bool has_out_extent(int i, int d) const;
  // Element k of value input i as an Expr of the tensor's element type (Int(64) for integer
  // tensors, Float(32) for float ones, float16/bfloat16 included): value_exprs[i][k] (cast to that type) when given, else
  // the constant infer().value(i) element.
  Halide::Expr value_expr(int i, int64_t k) const;
  bool has_value_exprs(int i) const;

  // Vars named for the node, one per axis of output i, in ONNX order.
  std::vector<Halide::Var> vars(int rank) const;
  // Defines output i as func(rev(v)) = e (e is cast to the output's element type).
  void define_output(int i, const std::vector<Halide::Var>& v, const Halide::Expr& e);
  // Uses an already defined Func (ONNX-order args) as output i.
  void set_output(int i, Halide::Func f);
  // A fresh Func named after the node, registered as an intermediate stage with a role.
  Halide::Func stage(const std::string& suffix, StageRole role, std::vector<Halide::RVar> reduction = {},
                     FlatLayout flat = {});
  // Registers a Func created elsewhere (e.g. by a helper) as a stage.
  void add_stage(Halide::Func f, StageRole role, std::vector<Halide::RVar> reduction = {});
  // Embeds a small constant tensor into the pipeline.
  TensorFunc constant(const Tensor& t, const std::string& suffix);

  const std::vector<TensorFunc>& outputs() const { return outputs_; }
  const std::vector<Stage>& stages() const { return stages_; }
  std::string prefix() const { return prefix_; }

  // Input i read at output index `out_idx` with numpy broadcasting (right-aligned, size-1 dims
  // read at 0), as a value of the input's element type.
  Halide::Expr broadcast_read(int i, const std::vector<Halide::Var>& out_idx) const;

 private:
  const InferContext& infer_;
  std::vector<TensorFunc> inputs_;
  std::vector<bool> present_;
  std::vector<TensorDesc> out_desc_;
  std::vector<std::vector<Halide::Expr>> out_extents_;
  std::vector<std::vector<Halide::Expr>> value_exprs_;
  std::vector<TensorFunc> outputs_;
  std::vector<Stage> stages_;
  std::string prefix_;
  mutable int counter_ = 0;
};

// Reverses an ONNX-order index list into Halide argument order.
std::vector<Halide::Expr> halide_args(const std::vector<Halide::Expr>& onnx_idx);
std::vector<Halide::Var> halide_args(const std::vector<Halide::Var>& onnx_idx);
// Right-aligned numpy broadcast read of `t` for an output of rank `out_rank`.
Halide::Expr broadcast_read(const TensorFunc& t, const std::vector<Halide::Var>& out_idx);
// Numpy broadcast of shapes; throws via ctx.fail on incompatibility.
Shape broadcast_shapes(const InferContext& ctx, const std::vector<Shape>& shapes);
// Constant-folds an index or extent expression (Internal::simplify): sums and products of
// constant extents become one IntImm, which the schedules read through as_const_int (RDom
// extents) and which keeps the static algorithm exactly what it was with int64_t arithmetic.
Halide::Expr fold(const Halide::Expr& e);
// The product of `extents` (1 for none), folded.
Halide::Expr product(const std::vector<Halide::Expr>& extents);
// The constant value of an integer Expr, if it is one.
std::optional<int64_t> const_value(const Halide::Expr& e);
// Converts a tensor element expression to bool (for Bool tensors stored as uint8).
Halide::Expr as_bool(const Halide::Expr& e);
Halide::Expr from_bool(const Halide::Expr& cond);

}  // namespace gaf
