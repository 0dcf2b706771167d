#include "fusion/models/bert.h"

#include <cmath>
#include <random>

#include "fusion/ir/builder.h"

namespace gaf {

namespace {

class WeightGen {
 public:
  explicit WeightGen(uint32_t seed) : seed_(seed) {}
  // Normal(mean, std) weights (BERT's initialiser uses std 0.02), made when first read: each
  // tensor from its own stream (the seed and its index), so planning, which reads no weights,
  // makes none (Tensor::deferred).
  Tensor normal(Shape s, float mean, float stddev) {
    const uint32_t seed = seed_, index = next_++;
    return Tensor::deferred(DType::Float32, std::move(s), [=](Tensor& t) {
      std::seed_seq seq{seed, index};
      std::mt19937 rng(seq);
      std::normal_distribution<float> d(mean, stddev);
      float* p = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
    });
  }

 private:
  uint32_t seed_;
  uint32_t next_ = 0;
};

// y = x @ W + b (PyTorch exports Linear as MatMul with the transposed weight, then Add).
ValueRef linear(GraphBuilder& g, WeightGen& w, const std::string& name, ValueRef x, int64_t in, int64_t out) {
  GraphBuilder::Scope s(g, name);
  ValueRef W = g.weight(name + ".weight", w.normal({in, out}, 0.0f, 0.02f));
  ValueRef b = g.weight(name + ".bias", w.normal({out}, 0.0f, 0.02f));
  return g.add(g.matmul(x, W), b);
}

// LayerNorm over the last axis, decomposed as torch.onnx.export (opset 14) writes it.
ValueRef layer_norm(GraphBuilder& g, WeightGen& w, const std::string& name, ValueRef x, int64_t hidden, float eps) {
  GraphBuilder::Scope s(g, name);
  ValueRef gamma = g.weight(name + ".weight", w.normal({hidden}, 1.0f, 0.1f));
  ValueRef beta = g.weight(name + ".bias", w.normal({hidden}, 0.0f, 0.1f));
  ValueRef mean = g.reduce_mean(x, {-1});
  ValueRef d = g.sub(x, mean);
  ValueRef var = g.reduce_mean(g.pow(d, g.scalar(2.0f)), {-1});
  ValueRef inv = g.sqrt(g.add(var, g.scalar(eps)));
  return g.add(g.mul(g.div(d, inv), gamma), beta);
}

// GELU (erf form), decomposed: x * 0.5 * (1 + erf(x / sqrt 2)) as Div/Erf/Add/Mul/Mul.
ValueRef gelu(GraphBuilder& g, ValueRef x) {
  GraphBuilder::Scope s(g, "gelu");
  ValueRef e = g.erf(g.div(x, g.scalar(1.4142135381698608f)));
  return g.mul(g.mul(x, g.add(e, g.scalar(1.0f))), g.scalar(0.5f));
}

}  // namespace

Graph build_bert(const BertConfig& cfg) {
  GraphBuilder g("bert_encoder");
  WeightGen w(cfg.seed);
  const int64_t H = cfg.hidden, NH = cfg.heads, D = cfg.hidden / cfg.heads;
  ValueRef x = g.input("hidden_states", DType::Float32, {Dim::sym("batch"), Dim::sym("seq"), H});
  ValueRef mask = g.input("attention_mask", DType::Float32, {Dim::sym("batch"), Dim::sym("seq")});

  // Additive mask [batch, 1, 1, seq]: 0 where attended, -10000 at padding (as HF BERT).
  ValueRef ext;
  {
    GraphBuilder::Scope s(g, "mask");
    ValueRef m4 = g.unsqueeze(mask, {1, 2});
    ext = g.mul(g.sub(g.scalar(1.0f), m4), g.scalar(-10000.0f));
  }
  for (int l = 0; l < cfg.layers; ++l) {
    std::string L = "encoder.layer." + std::to_string(l);
    GraphBuilder::Scope layer(g, L);
    ValueRef attn_out;
    {
      GraphBuilder::Scope s(g, "attention");
      auto heads = [&](ValueRef t, const std::vector<int64_t>& perm) {
        return g.transpose(g.reshape(t, {0, 0, NH, D}), perm);
      };
      ValueRef q = heads(linear(g, w, L + ".attention.self.query", x, H, H), {0, 2, 1, 3});
      ValueRef k = heads(linear(g, w, L + ".attention.self.key", x, H, H), {0, 2, 3, 1});
      ValueRef v = heads(linear(g, w, L + ".attention.self.value", x, H, H), {0, 2, 1, 3});
      ValueRef scores = g.div(g.matmul(q, k), g.scalar(std::sqrt(static_cast<float>(D))));
      ValueRef probs = g.softmax(g.add(scores, ext), -1);
      ValueRef ctx = g.reshape(g.transpose(g.matmul(probs, v), {0, 2, 1, 3}), {0, 0, H});
      ValueRef o = linear(g, w, L + ".attention.output.dense", ctx, H, H);
      attn_out = layer_norm(g, w, L + ".attention.output.LayerNorm", g.add(o, x), H, cfg.eps);
    }
    {
      GraphBuilder::Scope s(g, "ffn");
      ValueRef h = gelu(g, linear(g, w, L + ".intermediate.dense", attn_out, H, cfg.ffn));
      ValueRef o = linear(g, w, L + ".output.dense", h, cfg.ffn, H);
      x = layer_norm(g, w, L + ".output.LayerNorm", g.add(o, attn_out), H, cfg.eps);
    }
  }
  g.output(x, "last_hidden_state");
  return g.finish();
}

int64_t bert_weight_bytes(const BertConfig& cfg) {
  const int64_t H = cfg.hidden, F = cfg.ffn;
  // Per layer: Q, K, V and the output projection (H x H + H each), the FFN's two linears, two
  // LayerNorms (scale and bias); float32.
  int64_t per_layer = checked_add(checked_mul(4, H * H + H), H * F + F + F * H + H);
  per_layer = checked_add(per_layer, 4 * H);
  return checked_mul(checked_mul(per_layer, cfg.layers, "BERT weights"), 4, "BERT weight bytes");
}

}  // namespace gaf
