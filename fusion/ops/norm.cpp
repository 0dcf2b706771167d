// Normalisations: Softmax, LogSoftmax, LayerNormalization, BatchNormalization,
// InstanceNormalization. Row statistics
// are Statistic stages from reduce_util.h, accumulated in float32.
#include <cmath>

#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"
#include "fusion/ops/math.h"
#include "fusion/ops/reduce_util.h"

namespace gaf {

using namespace Halide;

namespace {

// The ONNX importer records the model's default-domain opset on every node as "_opset".
int64_t opset(const InferContext& c) { return c.attrs().get_int("_opset", 13); }

bool output_requested(const InferContext& c, int i) { return i < c.num_outputs() && !c.node().outputs[i].empty(); }

std::vector<bool> axes_from(int rank, int first) {
  std::vector<bool> r(rank, false);
  for (int d = first; d < rank; ++d) r[d] = true;
  return r;
}

void check_f32(const InferContext& c, int i) {
  c.check(c.dtype(i) == DType::Float32,
          "input " + std::to_string(i) + " must be float32, got " + dtype_name(c.dtype(i)));
}

IndexExpr reader(const TensorFunc& t) {
  return [t](const std::vector<Expr>& idx) { return t(idx); };
}

// Softmax / LogSoftmax. Opset 13+: over the single 'axis' (default -1). Older opsets coerce the
// input to 2-D [prod(dims < axis), prod(dims >= axis)] (axis default 1), i.e. they normalise
// over all axes from 'axis' on. Stable form: exp(x - max) / sum exp(x - max).
void add_softmax(OpRegistry& r, const std::string& name, bool log) {
  OpSchema s;
  s.name = name;
  s.op_class = OpClass::Reduction;
  s.split_rule = OpSchema::SplitRule::Softmax;
  s.infer = [](const InferContext& c) {
    check_f32(c, 0);
    c.check(c.rank(0) >= 1, "input must have rank >= 1");
    c.axis(c.attrs().get_int("axis", opset(c) >= 13 ? -1 : 1), c.rank(0));
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  s.build = [log](BuildContext& b) {
    const InferContext& c = b.infer();
    const TensorFunc& x = b.in(0);
    int rank = x.rank();
    bool legacy = opset(c) < 13;
    int axis = c.axis(c.attrs().get_int("axis", legacy ? 1 : -1), rank);
    std::vector<bool> reduced(rank, false);
    if (legacy)
      reduced = axes_from(rank, axis);
    else
      reduced[axis] = true;
    RowStat mx = reduce_stage(b, "max", x.dims(), reduced, ReduceKind::Max, reader(x));
    auto shifted = [&](const std::vector<Expr>& idx) { return x(idx) - mx.at(idx); };
    std::vector<Var> v = b.vars(rank);
    std::vector<Expr> idx(v.begin(), v.end());
    // e^(x - max), read by the sum and (Softmax) by the output: one exp per element where a
    // schedule computes it per row (attention's blocks), two where it is inlined.
    Func e = b.stage("exp", StageRole::RowValues);
    e(halide_args(v)) = exp_f32(shifted(idx));
    RowStat sum = reduce_stage(b, "sumexp", x.dims(), reduced, ReduceKind::Sum,
                               [&](const std::vector<Expr>& i) { return e(halide_args(i)); });
    if (log) {
      RowStat logsum = map_stat(b, "logsum", sum, [](const Expr& e) { return log_f32(e); });
      // strict: Halide would otherwise reassociate (x - max) - logsum into x - (max + logsum),
      // which loses the low bits of the result when |x| is large.
      b.define_output(0, v, strict_float(shifted(idx) - logsum.at(idx)));
    } else {
      RowStat inv = map_stat(b, "invsum", sum, [](const Expr& e) { return 1.0f / e; });
      b.define_output(0, v, e(halide_args(idx)) * inv.at(idx));
    }
  };
  r.add(std::move(s));
}

// LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev? over the axes from 'axis' (default
// -1) on. Mean and InvStdDev keep X's rank with size-1 normalised axes; they are float32
// whatever stash_type says (only float32 is supported).
void add_layer_norm(OpRegistry& r) {
  OpSchema s;
  s.name = "LayerNormalization";
  s.split_rule = OpSchema::SplitRule::LayerNorm;
  s.op_class = OpClass::Reduction;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.max_outputs = 3;
  s.infer = [](const InferContext& c) {
    for (int i = 0; i < c.num_inputs(); ++i)
      if (c.has_input(i)) check_f32(c, i);
    int axis = c.axis(c.attrs().get_int("axis", -1), c.rank(0));
    Shape norm(c.shape(0).begin() + axis, c.shape(0).end());
    for (int i = 1; i < c.num_inputs(); ++i)
      if (c.has_input(i))
        c.check(broadcast_shapes(c, {c.shape(i), norm}) == norm,
                std::string(i == 1 ? "Scale" : "B") + " of shape " + shape_str(c.shape(i)) +
                    " does not broadcast to the normalised shape " + shape_str(norm));
    Shape stat = c.shape(0);
    for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}, {DType::Float32, stat}, {DType::Float32, stat}};
  };
  s.build = [](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    int rank = x.rank();
    int axis = b.infer().axis(b.attrs().get_int("axis", -1), rank);
    float eps = b.attrs().get_float("epsilon", 1e-5f);
    std::vector<bool> reduced = axes_from(rank, axis);
    MeanVar mv = mean_var(b, x.dims(), reduced, reader(x));
    RowStat inv = map_stat(b, "invstd", mv.var, [eps](const Expr& v) { return 1.0f / sqrt(v + eps); });
    std::vector<Var> v = b.vars(rank);
    Expr y = (x(v) - mv.mean.at(v)) * inv.at(v) * b.broadcast_read(1, v);
    if (b.has_input(2)) y = y + b.broadcast_read(2, v);
    b.define_output(0, v, y);
    if (b.num_outputs() > 1) b.define_output(1, v, mv.mean.at(v));
    if (b.num_outputs() > 2) b.define_output(2, v, inv.at(v));
  };
  r.add(std::move(s));
}

// InstanceNormalization(X [N, C, spatial...], scale [C], B [C]): per image and channel over the
// spatial axes, y = (x - mean) / sqrt(var + epsilon) * scale[c] + B[c] (population variance).
void add_instance_norm(OpRegistry& r) {
  OpSchema s;
  s.name = "InstanceNormalization";
  s.op_class = OpClass::Reduction;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) {
    for (int i = 0; i < 3; ++i) check_f32(c, i);
    c.check(c.rank(0) >= 3, "X " + shape_str(c.shape(0)) + " must have rank >= 3 (N, C, spatial...)");
    const Shape channels{c.shape(0)[1]};
    c.check(c.shape(1) == channels && c.shape(2) == channels,
            "scale " + shape_str(c.shape(1)) + " and B " + shape_str(c.shape(2)) + " must be " + shape_str(channels));
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  s.build = [](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    const int rank = x.rank();
    const float eps = b.attrs().get_float("epsilon", 1e-5f);
    MeanVar mv = mean_var(b, x.dims(), axes_from(rank, 2), reader(x));
    RowStat inv = map_stat(b, "invstd", mv.var, [eps](const Expr& v) { return 1.0f / sqrt(v + eps); });
    std::vector<Var> v = b.vars(rank);
    b.define_output(0, v, (x(v) - mv.mean.at(v)) * inv.at(v) * b.in(1)({Expr(v[1])}) + b.in(2)({Expr(v[1])}));
  };
  r.add(std::move(s));
}

// BatchNormalization(X, scale, B, mean, var) over channel axis 1.
// Inference: y = (x - mean) / sqrt(var + eps) * scale + B, a per-element map.
// Training (training_mode=1 from opset 14; older opsets train when they ask for the running
// statistics): normalises with the batch mean and population variance over every axis but 1 and
// also outputs running_mean = mean * momentum + batch_mean * (1 - momentum), likewise the var.
// Opset < 14's saved_mean / saved_var outputs (3, 4) are not supported.
bool bn_training(const InferContext& c) {
  if (c.attrs().get_int("training_mode", 0) != 0) return true;
  return opset(c) < 14 && (output_requested(c, 1) || output_requested(c, 2));
}

void add_batch_norm(OpRegistry& r) {
  OpSchema s;
  s.name = "BatchNormalization";
  s.split_rule = OpSchema::SplitRule::Stop;
  // The class is per op: BatchNorm is nearly always inference, a broadcast map. Training mode
  // adds Statistic stages, which the reference schedule materialises like any reduction's.
  s.op_class = OpClass::Broadcast;
  s.min_inputs = s.max_inputs = 5;
  s.max_outputs = 5;
  s.infer = [](const InferContext& c) {
    for (int i = 0; i < 5; ++i) check_f32(c, i);
    c.check(c.rank(0) >= 2, "X must have rank >= 2 (N, C, ...), got " + shape_str(c.shape(0)));
    int64_t C = c.shape(0)[1];
    for (int i = 1; i < 5; ++i)
      c.check(c.shape(i) == Shape{C},
              "input " + std::to_string(i) + " must have shape " + shape_str({C}) + ", got " + shape_str(c.shape(i)) +
                  (c.attrs().get_int("spatial", 1) == 0 ? " (spatial=0 is not supported)" : ""));
    for (int i = 3; i < 5; ++i)
      c.check(!output_requested(c, i), "output " + std::to_string(i) + " (saved_mean/saved_var) is not supported");
    if (!bn_training(c))
      for (int i = 1; i < 3; ++i) c.check(!output_requested(c, i), "running mean/var outputs need training_mode=1");
    std::vector<TensorDesc> out(5, TensorDesc{DType::Float32, {C}});
    out[0].shape = c.shape(0);
    return out;
  };
  s.build = [](BuildContext& b) {
    const TensorFunc& x = b.in(0);
    int rank = x.rank();
    float eps = b.attrs().get_float("epsilon", 1e-5f);
    float momentum = b.attrs().get_float("momentum", 0.9f);
    std::vector<Var> v = b.vars(rank);
    auto per_channel = [&](int i) { return b.in(i)({Expr(v[1])}); };
    Var ch(b.prefix() + "_c");
    if (!bn_training(b.infer())) {
      b.define_output(0, v, (x(v) - per_channel(3)) / sqrt(per_channel(4) + eps) * per_channel(1) + per_channel(2));
      // Outputs beyond Y can only be present unnamed here (infer rejects named ones).
      for (int k = 1; k < b.num_outputs(); ++k) b.define_output(k, {ch}, b.in(k % 2 ? 3 : 4)({Expr(ch)}));
      return;
    }
    std::vector<bool> reduced(rank, true);
    reduced[1] = false;
    MeanVar mv = mean_var(b, x.dims(), reduced, reader(x));
    b.define_output(0, v, (x(v) - mv.mean.at(v)) / sqrt(mv.var.at(v) + eps) * per_channel(1) + per_channel(2));
    // Outputs 1, 2: the running statistics. 3, 4 (opset < 14) can only be unnamed: batch stats.
    for (int k = 1; k < b.num_outputs(); ++k) {
      const RowStat& batch = k % 2 ? mv.mean : mv.var;
      Expr e = batch.func(ch);
      if (k <= 2) e = b.in(k + 2)({Expr(ch)}) * momentum + e * (1.0f - momentum);
      b.define_output(k, {ch}, e);
    }
  };
  r.add(std::move(s));
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  add_softmax(r, "Softmax", false);
  add_softmax(r, "LogSoftmax", true);
  add_layer_norm(r);
  add_instance_norm(r);
  add_batch_norm(r);
}

}  // namespace gaf
