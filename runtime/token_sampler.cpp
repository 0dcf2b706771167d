#include "runtime/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gaf {

void Sampling::check() const {
  if (!(temperature >= 0) || !std::isfinite(temperature))
    throw GafError("--temperature " + std::to_string(temperature) + ": must be 0 (greedy) or more");
  if (top_k < 0) throw GafError("--top-k " + std::to_string(top_k) + ": must be 0 (all) or more");
  if (!(top_p > 0 && top_p <= 1)) throw GafError("--top-p " + std::to_string(top_p) + ": must be in (0, 1]");
}

std::string Sampling::str() const {
  if (greedy()) return "greedy";
  char text[160];
  std::snprintf(text, sizeof text, "temperature %g, top-k %lld, top-p %g, seed %llu", temperature,
                static_cast<long long>(top_k), top_p, static_cast<unsigned long long>(seed));
  return text;
}

TokenSampler::TokenSampler(const Sampling& s) : s_(s), rng_(s.seed) { s_.check(); }

Tensor TokenSampler::next(const Tensor& logits) {
  if (logits.dtype() != DType::Float32 || logits.shape().size() != 3 || logits.shape()[1] < 1 || logits.shape()[2] < 1)
    throw GafError("output 'logits' is " + std::string(dtype_name(logits.dtype())) + " " + shape_str(logits.shape()) +
                   ", expected float32 [batch, seq, vocab]");
  const int64_t b = logits.shape()[0], s = logits.shape()[1], v = logits.shape()[2];
  Tensor ids(DType::Int64, {b, 1});
  for (int64_t r = 0; r < b; ++r) {
    const float* row = logits.data<float>() + (r * s + s - 1) * v;
    if (s_.greedy()) {
      ids.data<int64_t>()[r] = std::max_element(row, row + v) - row;  // the first largest, as torch.argmax
      continue;
    }
    ids.data<int64_t>()[r] = sample_row(row, v);
  }
  return ids;
}

// Temperature, then top-k, then top-p over the softmax of what top-k kept (the order Hugging
// Face's samplers apply them), then one draw.
int64_t TokenSampler::sample_row(const float* row, int64_t vocab) {
  kept_.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) kept_[i] = {row[i], i};
  // Largest logit first; equal logits by id, so that the order (and the draw) is reproducible.
  auto larger = [](const std::pair<float, int64_t>& x, const std::pair<float, int64_t>& y) {
    return x.first > y.first || (x.first == y.first && x.second < y.second);
  };
  const size_t k = s_.top_k > 0 ? static_cast<size_t>(std::min(s_.top_k, vocab)) : kept_.size();
  std::partial_sort(kept_.begin(), kept_.begin() + k, kept_.end(), larger);
  kept_.resize(k);
  probs_.resize(k);
  const double top = kept_[0].first;
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += probs_[i] = std::exp((kept_[i].first - top) / s_.temperature);
  size_t n = k;
  if (s_.top_p < 1) {
    double cumulative = 0;
    for (n = 0; n < k;) {
      cumulative += probs_[n++] / sum;
      if (cumulative >= s_.top_p) break;
    }
    sum = 0;
    for (size_t i = 0; i < n; ++i) sum += probs_[i];
  }
  // A uniform in [0, 1) from the top 53 bits of one draw.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * sum;
  double cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    cumulative += probs_[i];
    if (u < cumulative) return kept_[i].second;
  }
  return kept_[n - 1].second;  // u within rounding of the sum
}

}  // namespace gaf
