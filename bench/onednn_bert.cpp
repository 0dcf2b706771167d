// OnednnBert: the hand-fused oneDNN BERT-base encoder (see onednn_peer.h).
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench/onednn_common.h"
#include "bench/onednn_peer.h"

namespace gaf::bench {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

const Tensor& initializer(const Graph& g, const std::string& name) {
  if (!g.has_value(name) || !g.value(name).constant)
    throw GafError("OnednnBert: the graph has no initializer '" + name + "' (not a builtin:bert-base graph?)");
  return *g.value(name).constant;
}

memory copy_to(const memory::desc& md, const void* data, size_t bytes) {
  memory m(md, cpu_engine());
  std::memcpy(m.get_data_handle(), data, bytes);
  return m;
}

// Dense row-major f32 descriptor (rank 2 or 4).
memory::desc plain(const memory::dims& dims) {
  return memory::desc(dims, dt::f32, dims.size() == 2 ? tag::ab : tag::abcd);
}

dnnl::matmul::primitive_desc matmul_pd(const memory::desc& src, const memory::desc& w, const memory::desc* bias,
                                       const memory::desc& dst, const dnnl::primitive_attr& attr) {
  dnnl::matmul::desc d = bias ? dnnl::matmul::desc(src, w, *bias, dst) : dnnl::matmul::desc(src, w, dst);
  return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
}

}  // namespace

struct OnednnBert::Impl {
  int layers;
  int64_t B, S, H = 768, NH = 12, D = 64, F = 3072, M;
  float eps = 1e-12f;

  struct Layer {
    memory wqkv, bqkv, wo, bo, ln1_scale, ln1_shift, w1, b1, w2, b2, ln2_scale, ln2_shift;
  };
  std::vector<Layer> w;

  dnnl::matmul qkv, scores, ctx, out, ffn1, ffn2;
  dnnl::softmax_forward softmax;
  dnnl::layer_normalization_forward ln;
  // Descriptors of the strided per-head views into the QKV buffer.
  memory::desc q_md, kt_md, v_md, ctx_md, mask_md;
  // Activations: x is the layer input and output.
  memory x, qkv_buf, scores_buf, ctx_buf, attn, a1, h, o, mask_ext;

  Impl(const Graph& g, int layers_, int64_t batch, int64_t seq);
  Layer load_layer(const Graph& g, int l, const dnnl::matmul::primitive_desc& qkv_pd,
                   const dnnl::matmul::primitive_desc& out_pd, const dnnl::matmul::primitive_desc& ffn1_pd,
                   const dnnl::matmul::primitive_desc& ffn2_pd);
};

OnednnBert::Impl::Impl(const Graph& g, int layers_, int64_t batch, int64_t seq)
    : layers(layers_), B(batch), S(seq), M(batch * seq) {
  const memory::desc x_md = plain({M, H}), qkv_md = plain({M, 3 * H}), h_md = plain({M, F});
  const memory::desc scores_md = plain({B, NH, S, S});
  const memory::desc bias_h = plain({1, H}), bias_3h = plain({1, 3 * H}), bias_f = plain({1, F});
  auto w_any = [](int64_t k, int64_t n) { return memory::desc({k, n}, dt::f32, tag::any); };
  // Head views: Q[b,h,s,d] = qkv[(b*S + s)*3H + h*D + d]; K^T swaps the last two strides.
  q_md = memory::desc({B, NH, S, D}, dt::f32, memory::dims{S * 3 * H, D, 3 * H, 1});
  kt_md = memory::desc({B, NH, D, S}, dt::f32, memory::dims{S * 3 * H, D, 1, 3 * H});
  v_md = q_md;
  ctx_md = memory::desc({B, NH, S, D}, dt::f32, memory::dims{S * H, D, H, 1});  // = [B,S,H]
  mask_md = plain({B, 1, 1, S});

  dnnl::primitive_attr none;
  auto qkv_pd = matmul_pd(x_md, w_any(H, 3 * H), &bias_3h, qkv_md, none);

  dnnl::primitive_attr scores_attr;
  scores_attr.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(D))});
  dnnl::post_ops mask_po;
  mask_po.append_binary(dnnl::algorithm::binary_add, mask_md);
  scores_attr.set_post_ops(mask_po);
  auto scores_pd = matmul_pd(q_md, kt_md, nullptr, scores_md, scores_attr);
  auto ctx_pd = matmul_pd(scores_md, v_md, nullptr, ctx_md, none);

  dnnl::primitive_attr residual_attr;
  dnnl::post_ops residual_po;
  residual_po.append_binary(dnnl::algorithm::binary_add, x_md);
  residual_attr.set_post_ops(residual_po);
  auto out_pd = matmul_pd(x_md, w_any(H, H), &bias_h, x_md, residual_attr);

  dnnl::primitive_attr gelu_attr;
  dnnl::post_ops gelu_po;
  gelu_po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  gelu_attr.set_post_ops(gelu_po);
  auto ffn1_pd = matmul_pd(x_md, w_any(H, F), &bias_f, h_md, gelu_attr);
  auto ffn2_pd = matmul_pd(h_md, w_any(F, H), &bias_h, x_md, residual_attr);

  dnnl::softmax_forward::primitive_desc softmax_pd(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, scores_md, 3), cpu_engine());
  dnnl::layer_normalization_forward::primitive_desc ln_pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, x_md, eps,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      cpu_engine());

  qkv = dnnl::matmul(qkv_pd);
  scores = dnnl::matmul(scores_pd);
  ctx = dnnl::matmul(ctx_pd);
  out = dnnl::matmul(out_pd);
  ffn1 = dnnl::matmul(ffn1_pd);
  ffn2 = dnnl::matmul(ffn2_pd);
  softmax = dnnl::softmax_forward(softmax_pd);
  ln = dnnl::layer_normalization_forward(ln_pd);

  auto& e = cpu_engine();
  x = memory(x_md, e);
  qkv_buf = memory(qkv_md, e);
  scores_buf = memory(scores_md, e);
  ctx_buf = memory(x_md, e);
  attn = memory(x_md, e);
  a1 = memory(x_md, e);
  h = memory(h_md, e);
  o = memory(x_md, e);
  mask_ext = memory(mask_md, e);
  for (int l = 0; l < layers; ++l) w.push_back(load_layer(g, l, qkv_pd, out_pd, ffn1_pd, ffn2_pd));
}

OnednnBert::Impl::Layer OnednnBert::Impl::load_layer(const Graph& g, int l, const dnnl::matmul::primitive_desc& qkv_pd,
                                                     const dnnl::matmul::primitive_desc& out_pd,
                                                     const dnnl::matmul::primitive_desc& ffn1_pd,
                                                     const dnnl::matmul::primitive_desc& ffn2_pd) {
  const std::string L = "encoder.layer." + std::to_string(l);
  auto t = [&](const std::string& name) -> const Tensor& { return initializer(g, L + name); };
  // Weights [in,out] in a plain layout, reordered into the primitive's layout.
  auto weights = [&](const Tensor& src, const dnnl::matmul::primitive_desc& pd) {
    memory p = copy_to(plain({src.shape()[0], src.shape()[1]}), src.raw(), src.nbytes());
    return reorder_to(p, pd.weights_desc());
  };
  auto vec = [&](const Tensor& src) { return copy_to(plain({1, src.numel()}), src.raw(), src.nbytes()); };

  // Q, K, V weights side by side: row i of Wqkv = [Wq[i,:], Wk[i,:], Wv[i,:]].
  const Tensor* qkv_w[3] = {&t(".attention.self.query.weight"), &t(".attention.self.key.weight"),
                            &t(".attention.self.value.weight")};
  const Tensor* qkv_b[3] = {&t(".attention.self.query.bias"), &t(".attention.self.key.bias"),
                            &t(".attention.self.value.bias")};
  Tensor wqkv(DType::Float32, {H, 3 * H}), bqkv(DType::Float32, {3 * H});
  for (int p = 0; p < 3; ++p) {
    if (qkv_w[p]->shape() != Shape{H, H}) throw GafError("OnednnBert: " + L + " Q/K/V weights must be [768,768]");
    for (int64_t i = 0; i < H; ++i)
      std::memcpy(wqkv.data<float>() + i * 3 * H + p * H, qkv_w[p]->data<float>() + i * H, H * sizeof(float));
    std::memcpy(bqkv.data<float>() + p * H, qkv_b[p]->data<float>(), H * sizeof(float));
  }
  Layer ly;
  ly.wqkv = weights(wqkv, qkv_pd);
  ly.bqkv = vec(bqkv);
  ly.wo = weights(t(".attention.output.dense.weight"), out_pd);
  ly.bo = vec(t(".attention.output.dense.bias"));
  ly.ln1_scale = vec(t(".attention.output.LayerNorm.weight"));
  ly.ln1_shift = vec(t(".attention.output.LayerNorm.bias"));
  ly.w1 = weights(t(".intermediate.dense.weight"), ffn1_pd);
  ly.b1 = vec(t(".intermediate.dense.bias"));
  ly.w2 = weights(t(".output.dense.weight"), ffn2_pd);
  ly.b2 = vec(t(".output.dense.bias"));
  ly.ln2_scale = vec(t(".output.LayerNorm.weight"));
  ly.ln2_shift = vec(t(".output.LayerNorm.bias"));
  return ly;
}

OnednnBert::OnednnBert(const Graph& g, int layers, int64_t batch, int64_t seq)
    : impl_(new Impl(g, layers, batch, seq)) {}

OnednnBert::~OnednnBert() = default;

Tensor OnednnBert::run(const Tensor& hidden_states, const Tensor& attention_mask) {
  Impl& m = *impl_;
  if (hidden_states.shape() != Shape{m.B, m.S, m.H} || attention_mask.shape() != Shape{m.B, m.S})
    throw GafError("OnednnBert::run: expected hidden_states " + shape_str({m.B, m.S, m.H}) + " and attention_mask " +
                   shape_str({m.B, m.S}));
  dnnl::stream& s = cpu_stream();
  std::memcpy(m.x.get_data_handle(), hidden_states.raw(), hidden_states.nbytes());
  // Additive mask as HF BERT: 0 where attended, -10000 at padding.
  float* ext = static_cast<float*>(m.mask_ext.get_data_handle());
  for (int64_t i = 0; i < m.B * m.S; ++i) ext[i] = (1.0f - attention_mask.data<float>()[i]) * -10000.0f;

  float* qkv_ptr = static_cast<float*>(m.qkv_buf.get_data_handle());
  memory q(m.q_md, cpu_engine(), qkv_ptr), kt(m.kt_md, cpu_engine(), qkv_ptr + m.H),
      v(m.v_md, cpu_engine(), qkv_ptr + 2 * m.H);
  memory ctx_view(m.ctx_md, cpu_engine(), m.ctx_buf.get_data_handle());
  const int post0 = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
  for (const Impl::Layer& w : m.w) {
    m.qkv.execute(
        s, Args{{DNNL_ARG_SRC, m.x}, {DNNL_ARG_WEIGHTS, w.wqkv}, {DNNL_ARG_BIAS, w.bqkv}, {DNNL_ARG_DST, m.qkv_buf}});
    m.scores.execute(
        s, Args{{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, kt}, {DNNL_ARG_DST, m.scores_buf}, {post0, m.mask_ext}});
    m.softmax.execute(s, Args{{DNNL_ARG_SRC, m.scores_buf}, {DNNL_ARG_DST, m.scores_buf}});
    m.ctx.execute(s, Args{{DNNL_ARG_SRC, m.scores_buf}, {DNNL_ARG_WEIGHTS, v}, {DNNL_ARG_DST, ctx_view}});
    m.out.execute(s, Args{{DNNL_ARG_SRC, m.ctx_buf},
                          {DNNL_ARG_WEIGHTS, w.wo},
                          {DNNL_ARG_BIAS, w.bo},
                          {DNNL_ARG_DST, m.attn},
                          {post0, m.x}});
    m.ln.execute(s, Args{{DNNL_ARG_SRC, m.attn},
                         {DNNL_ARG_DST, m.a1},
                         {DNNL_ARG_SCALE, w.ln1_scale},
                         {DNNL_ARG_SHIFT, w.ln1_shift}});
    m.ffn1.execute(s, Args{{DNNL_ARG_SRC, m.a1}, {DNNL_ARG_WEIGHTS, w.w1}, {DNNL_ARG_BIAS, w.b1}, {DNNL_ARG_DST, m.h}});
    m.ffn2.execute(
        s,
        Args{{DNNL_ARG_SRC, m.h}, {DNNL_ARG_WEIGHTS, w.w2}, {DNNL_ARG_BIAS, w.b2}, {DNNL_ARG_DST, m.o}, {post0, m.a1}});
    m.ln.execute(
        s,
        Args{{DNNL_ARG_SRC, m.o}, {DNNL_ARG_DST, m.x}, {DNNL_ARG_SCALE, w.ln2_scale}, {DNNL_ARG_SHIFT, w.ln2_shift}});
  }
  s.wait();
  Tensor out(DType::Float32, {m.B, m.S, m.H});
  std::memcpy(out.raw(), m.x.get_data_handle(), out.nbytes());
  return out;
}

}  // namespace gaf::bench
