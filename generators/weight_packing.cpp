#include "generators/weight_packing.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/float16.h"
#include "schedules/matmul_tile.h"

namespace gaf {

namespace {

int readers(const Graph& g, const std::string& value) {
  int n = 0;
  for (const Node& node : g.nodes()) n += static_cast<int>(std::count(node.inputs.begin(), node.inputs.end(), value));
  return n;
}

bool is_graph_output(const Graph& g, const std::string& value) {
  return std::find(g.outputs().begin(), g.outputs().end(), value) != g.outputs().end();
}

// B [K, N] as panels [ceil(N / w), K, w]; columns past N (the last panel's tail) are zeros.
Tensor pack_panels(const Tensor& b, int64_t w) {
  const int64_t K = b.shape()[0], N = b.shape()[1], P = (N + w - 1) / w;
  Tensor p(DType::Float32, {P, K, w});
  const float* src = b.data<float>();
  float* dst = p.data<float>();
  for (int64_t q = 0; q < P; ++q) {
    const int64_t cols = std::min(w, N - q * w);
    for (int64_t k = 0; k < K; ++k) std::memcpy(dst + (q * K + k) * w, src + k * N + q * w, cols * sizeof(float));
  }
  return p;
}

// B [K, N] as bfloat16 panels [ceil(N / w), K / 2, w, 2]: element (q, kp, j, e) is
// B[2 kp + e, q w + j] (zero past N).
Tensor pack_pair_panels(const Tensor& b, int64_t w) {
  const int64_t K = b.shape()[0], N = b.shape()[1], P = (N + w - 1) / w;
  Tensor p(DType::BFloat16, {P, K / 2, w, 2});
  const float* src = b.data<float>();
  uint16_t* dst = p.data<uint16_t>();
  for (int64_t q = 0; q < P; ++q) {
    const int64_t cols = std::min(w, N - q * w);
    for (int64_t kp = 0; kp < K / 2; ++kp)
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t e = 0; e < 2; ++e)
          dst[((q * (K / 2) + kp) * w + j) * 2 + e] = float_to_bf16_bits(src[(2 * kp + e) * N + q * w + j]);
  }
  return p;
}

// B [K, N] as int8 quad panels [ceil(N / w), K / 4 + 2, w, 4] (see weight_packing.h): element
// (q, kq, j, e) is B[4 kq + e, q w + j] quantized with its column's scale; rows K / 4 and
// K / 4 + 1 hold the column's scale and quant sum, byte e of each in lane e.
Tensor pack_quad_panels(const Tensor& b, int64_t w) {
  const int64_t K = b.shape()[0], N = b.shape()[1], P = (N + w - 1) / w, KQ = K / 4;
  Tensor p(DType::Int8, {P, KQ + 2, w, 4});
  std::memset(p.data<int8_t>(), 0, static_cast<size_t>(p.numel()));
  const float* src = b.data<float>();
  int8_t* dst = p.data<int8_t>();
  auto at = [&](int64_t q, int64_t kq, int64_t j) { return dst + ((q * (KQ + 2) + kq) * w + j) * 4; };
  for (int64_t n = 0; n < N; ++n) {
    const int64_t q = n / w, j = n % w;
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(src[k * N + n]));
    const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const float r = std::nearbyint(src[k * N + n] / scale);
      const int8_t v = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
      at(q, k / 4, j)[k % 4] = v;
      sum += v;
    }
    std::memcpy(at(q, KQ, j), &scale, 4);
    std::memcpy(at(q, KQ + 1, j), &sum, 4);
  }
  return p;
}

// The panel width for MatMul `n` packed in precision `q`, or 0 when its B is not packed.
int64_t panel_width(const Graph& g, const Node& n, const HostScheduleParams& p, Precision q) {
  if (n.op_type != "MatMul" || n.inputs.size() != 2 || packed_panel_width(n) > 0) return 0;
  const Value& a = g.value(n.inputs[0]);
  const Value& b = g.value(n.inputs[1]);
  if (!b.constant || b.constant->dtype() != DType::Float32 || b.constant->rank() != 2) return 0;
  if (!a.type.is_static() || a.type.dims.size() < 2) return 0;
  if (readers(g, n.inputs[1]) != 1 || is_graph_output(g, n.inputs[1])) return 0;
  const int64_t M = a.type.shape()[a.type.dims.size() - 2], N = b.constant->shape()[1];
  MatMulTile t = choose_matmul_tile(M, N, p);
  // Dot-product tiles (bf16 pairs, int8 quads) no wider than p.matmul.vectors vectors: the wider
  // tile choose_matmul_tile takes when it divides N ran 3.5x slower (a vocabulary-8192 LM head at
  // M = 1, 64 columns: bf16 0.40 ms, int8 0.28-0.31 ms, against 0.12 and 0.08 ms 48 wide with a
  // padded last panel; fp32 0.22 ms either way; AMD EPYC Zen 5).
  if (q != Precision::Fp32) t.width = std::min(t.width, p.matmul.vectors * p.lanes);
  // N need not be a multiple of the width (GPT-2's vocabulary of 50257): the last panel is
  // padded with zeros and its tile guarded (matmul_schedule.cpp). Unpacked, such a B was read
  // as 48-float rows 200 KB apart: the 154 MB LM head streamed at 12 GB/s instead of 31.
  if (t.width % p.lanes != 0 || t.width >= N) return 0;
  return t.width;
}

}  // namespace

int pack_matmul_weights(Graph& g, const HostScheduleParams& p, Precision precision, bool model_int8) {
  int packed = 0;
  for (Node& n : g.nodes()) {
    const Precision q = model_int8 && n.attrs.get_int("_int8_weights", 0) ? Precision::Int8 : precision;
    const int64_t w = panel_width(g, n, p, q);
    if (w == 0) continue;
    Value& b = g.value(n.inputs[1]);
    const int64_t K = b.constant->shape()[0], N = b.constant->shape()[1];
    Tensor t = q == Precision::Bf16 && K % 2 == 0   ? pack_pair_panels(*b.constant, w)
               : q == Precision::Int8 && K % 4 == 0 ? pack_quad_panels(*b.constant, w)
                                                    : pack_panels(*b.constant, w);
    b.type = TensorType(t.dtype(), t.shape());
    b.constant = std::move(t);  // the original [K, N] goes
    n.attrs.set("_b_panel", w);
    if (N % w != 0) n.attrs.set("_b_cols", N);  // the columns the padded panels hold
    ++packed;
  }
  return packed;
}

int64_t packed_panel_width(const Node& n) { return n.attrs.get_int("_b_panel", 0); }

DType packed_dot_weights(const Graph& g, const std::vector<int>& nodes) {
  for (int i : nodes) {
    const Node& n = g.nodes()[i];
    if (n.op_type != "MatMul" || packed_panel_width(n) == 0 || n.inputs.size() != 2) continue;
    const DType w = g.value(n.inputs[1]).type.dtype;
    if (w == DType::BFloat16 || w == DType::Int8) return w;
  }
  return DType::Float32;
}

}  // namespace gaf
