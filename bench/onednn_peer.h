// oneDNN peers for the bench (compiled only when CMake finds oneDNN; GAF_HAVE_DNNL is then 1):
// a MatMul with the post-ops of our MatMul groups, and a hand-fused BERT-base encoder forward
// built from the same weights as gaf's builtin:bert-base.
#pragma once

#include <memory>
#include <string>

#include "fusion/ir/graph.h"
#include "runtime/tensor.h"

namespace gaf::bench {

// oneDNN's version as "major.minor.patch".
std::string onednn_version();

// The epilogue after x @ W: what our matmul_epilogue groups fuse.
enum class Epilogue { Bias, BiasGelu, BiasResidual };

// dst[M,N] = epilogue(src[M,K] @ weights[K,N] + bias[N]) as one oneDNN matmul with post-ops
// (GELU erf as an eltwise post-op, the residual as a binary add post-op). The weights are
// reordered once, here, to the layout oneDNN picks (format_tag::any), as a deployment would.
class OnednnMatMul {
 public:
  // weights [K,N], bias [N]; `residual` [M,N] is read by BiasResidual only. `bf16`: src and
  // weights in bfloat16 (the weights converted here, src by a reorder inside run(), as our bf16
  // kernels round A as they read it), f32 accumulation, bias, post-ops and dst in float32.
  OnednnMatMul(int64_t M, int64_t K, int64_t N, Epilogue e, const Tensor& weights, const Tensor& bias,
               bool bf16 = false);
  ~OnednnMatMul();
  // src [M,K] (any shape with M*K elements), residual [M,N] or undefined; dst [M,N] is written.
  void run(const Tensor& src, const Tensor& residual, Tensor& dst);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A hand-fused BERT-base encoder (post-LN, GELU erf) in oneDNN primitives, batch B, sequence S:
// per layer fused QKV (one matmul, N = 3 x hidden) + bias, scores = Q K^T per head (batched
// strided matmul, the 1/sqrt(d) scale and the additive mask as attributes/post-op), softmax,
// probs V, output dense + bias + residual (post-op), layer norm, FFN1 + bias + GELU erf
// (post-ops), FFN2 + bias + residual, layer norm. Weights are taken by name from `g` (a graph
// built by gaf::build_bert or load_model("builtin:bert-base"), before any planner rewrite).
class OnednnBert {
 public:
  OnednnBert(const Graph& g, int layers, int64_t batch, int64_t seq);
  ~OnednnBert();
  // hidden_states [B,S,768], attention_mask [B,S] (1 attend, 0 pad) -> last_hidden_state [B,S,768].
  Tensor run(const Tensor& hidden_states, const Tensor& attention_mask);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gaf::bench
