#include "bench/onednn_peer.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <unordered_map>

#include "bench/onednn_common.h"

namespace gaf::bench {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& cpu_stream() {
  static dnnl::stream s(cpu_engine());
  return s;
}

dnnl::memory reorder_to(const dnnl::memory& plain, const dnnl::memory::desc& want) {
  if (plain.get_desc() == want) return plain;
  dnnl::memory out(want, cpu_engine());
  dnnl::reorder(plain, out).execute(cpu_stream(), const_cast<dnnl::memory&>(plain), out);
  cpu_stream().wait();
  return out;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

struct OnednnMatMul::Impl {
  int64_t M, K, N;
  Epilogue epilogue;
  dnnl::memory::desc src_md, dst_md, res_md;
  dnnl::matmul prim;
  dnnl::memory weights, bias;
  dnnl::memory src_lp;  // bf16: src converted here by run()
};

OnednnMatMul::OnednnMatMul(int64_t M, int64_t K, int64_t N, Epilogue e, const Tensor& weights, const Tensor& bias,
                           bool bf16)
    : impl_(new Impl{M, K, N, e, {}, {}, {}, {}, {}, {}, {}}) {
  if (weights.numel() != K * N || bias.numel() != N) throw GafError("OnednnMatMul: weights must be [K,N] and bias [N]");
  Impl& m = *impl_;
  m.src_md = dnnl::memory::desc({M, K}, dt::f32, tag::ab);
  const dt lp = bf16 ? dt::bf16 : dt::f32;
  const dnnl::memory::desc src_lp_md({M, K}, lp, tag::ab);
  if (bf16) m.src_lp = dnnl::memory(src_lp_md, cpu_engine());
  m.dst_md = dnnl::memory::desc({M, N}, dt::f32, tag::ab);
  m.res_md = dnnl::memory::desc({M, N}, dt::f32, tag::ab);
  dnnl::memory::desc w_any({K, N}, lp, tag::any), b_md({1, N}, dt::f32, tag::ab);
  dnnl::post_ops po;
  if (e == Epilogue::BiasGelu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  if (e == Epilogue::BiasResidual) po.append_binary(dnnl::algorithm::binary_add, m.res_md);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_lp_md, w_any, b_md, m.dst_md), attr, cpu_engine());
  m.prim = dnnl::matmul(pd);
  dnnl::memory w_plain({{K, N}, dt::f32, tag::ab}, cpu_engine(), const_cast<void*>(weights.raw()));
  m.weights = reorder_to(w_plain, pd.weights_desc());
  if (!bf16 && m.weights.get_data_handle() == w_plain.get_data_handle()) {  // keep our own copy
    m.weights = dnnl::memory(pd.weights_desc(), cpu_engine());
    std::memcpy(m.weights.get_data_handle(), weights.raw(), weights.nbytes());
  }
  m.bias = dnnl::memory(b_md, cpu_engine());
  std::memcpy(m.bias.get_data_handle(), bias.raw(), bias.nbytes());
}

OnednnMatMul::~OnednnMatMul() = default;

void OnednnMatMul::run(const Tensor& src, const Tensor& residual, Tensor& dst) {
  Impl& m = *impl_;
  if (src.numel() != m.M * m.K || dst.numel() != m.M * m.N)
    throw GafError("OnednnMatMul::run: src or dst has the wrong number of elements");
  dnnl::memory s(m.src_md, cpu_engine(), const_cast<void*>(src.raw()));
  dnnl::memory d(m.dst_md, cpu_engine(), dst.raw());
  if (m.src_lp) {
    dnnl::reorder(s, m.src_lp).execute(cpu_stream(), s, m.src_lp);
    s = m.src_lp;
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, m.weights}, {DNNL_ARG_BIAS, m.bias}, {DNNL_ARG_DST, d}};
  if (m.epilogue == Epilogue::BiasResidual) {
    if (residual.numel() != m.M * m.N) throw GafError("OnednnMatMul::run: residual must be [M,N]");
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 dnnl::memory(m.res_md, cpu_engine(), const_cast<void*>(residual.raw())));
  }
  m.prim.execute(cpu_stream(), args);
  cpu_stream().wait();
}

}  // namespace gaf::bench
