// One registration function per op family file (fusion/ops/<family>.cpp). Explicit calls rather
// than static initialisers, so that linking the ops as a static library never drops an op.
#pragma once

#include <vector>

namespace gaf {

class OpRegistry;
class InferContext;

void register_unary_ops(OpRegistry& r);           // unary.cpp: math, activations, Cast, Identity, Dropout
void register_binary_ops(OpRegistry& r);          // binary.cpp: arithmetic, comparisons, Where, Max/Min
void register_matmul_ops(OpRegistry& r);          // matmul.cpp: MatMul, Gemm
void register_reduce_ops(OpRegistry& r);          // reduce.cpp: ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp, GlobalAverage/MaxPool
void register_norm_ops(OpRegistry& r);            // norm.cpp: Softmax, LogSoftmax, LayerNorm, BatchNorm, InstanceNorm
void register_layout_ops(OpRegistry& r);          // layout.cpp: Transpose, Reshape, Flatten, (Un)Squeeze, Expand,
                                                  // DepthToSpace, SpaceToDepth
void register_indexing_ops(OpRegistry& r);        // indexing.cpp: Concat, Split, Slice, Gather
void register_constant_ops(OpRegistry& r);        // constant.cpp: Constant, ConstantOfShape, Shape
void register_trilu_ops(OpRegistry& r);           // trilu.cpp: Trilu (triangular masks)
void register_conv_ops(OpRegistry& r);            // conv.cpp: Conv (strides, pads, dilations, groups)
void register_conv_transpose_ops(OpRegistry& r);  // conv_transpose.cpp: ConvTranspose
void register_pool_ops(OpRegistry& r);            // pool.cpp: MaxPool, AveragePool
void register_pad_ops(OpRegistry& r);             // pad.cpp: Pad (constant, reflect, edge)
void register_resize_ops(OpRegistry& r);          // resize.cpp: Resize (nearest, linear)
void register_quantize_ops(OpRegistry& r);        // quantize.cpp: (De)QuantizeLinear, DynamicQuantizeLinear,
                                                  // MatMulInteger, QLinearMatMul
void register_comm_ops(OpRegistry& r);            // comm.cpp: AllReduce, AllGather (com.microsoft)
void register_einsum_ops(OpRegistry& r);          // einsum.cpp: Einsum

// Transpose's permutation: output axis d is input axis perm[d] (ONNX `perm`, default reversed);
// checked. Also read by the planner (fusion/planner/layout_chains.h, transpose_innermost_dim) to
// spot a transpose that moves the innermost axis.
std::vector<int> transpose_perm(const InferContext& c);
// AllGather's axis, normalised and checked (comm.cpp; the communicator kernel reads it too).
int64_t all_gather_axis(const InferContext& c);

inline void register_all_builtin_ops(OpRegistry& r) {
  register_unary_ops(r);
  register_binary_ops(r);
  register_matmul_ops(r);
  register_reduce_ops(r);
  register_norm_ops(r);
  register_layout_ops(r);
  register_indexing_ops(r);
  register_constant_ops(r);
  register_trilu_ops(r);
  register_conv_ops(r);
  register_conv_transpose_ops(r);
  register_pool_ops(r);
  register_pad_ops(r);
  register_resize_ops(r);
  register_quantize_ops(r);
  register_comm_ops(r);
  register_einsum_ops(r);
}

}  // namespace gaf
