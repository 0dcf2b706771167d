#include "runtime/decode_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace gaf {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const Tensor& output(const NamedTensors& out, const std::string& name) {
  auto it = out.find(name);
  if (it == out.end()) throw GafError("the decoder gave no output '" + name + "'");
  return it->second;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

std::string present_of(const std::string& past) {
  return kDecoderPresentPrefix + past.substr(std::strlen(kDecoderPastPrefix));
}

Tensor last_position_argmax(const Tensor& logits) { return TokenSampler(Sampling{}).next(logits); }

Generation decode_tokens(DecoderLoop& d, const Tensor& prompt, int64_t new_tokens, const Sampling& sampling) {
  if (prompt.dtype() != DType::Int64 || prompt.shape().size() != 2 || prompt.shape()[1] < 1)
    throw GafError("prompt is " + std::string(dtype_name(prompt.dtype())) + " " + shape_str(prompt.shape()) +
                   ", expected int64 [batch, P] with P >= 1");
  if (new_tokens < 1) throw GafError("new tokens: " + std::to_string(new_tokens) + ", expected at least 1");
  const int64_t batch = prompt.shape()[0];
  TokenSampler sampler(sampling);
  Generation g;
  g.tokens = Tensor(DType::Int64, {batch, new_tokens});
  auto keep = [&](const Tensor& next, int64_t t) {
    for (int64_t r = 0; r < batch; ++r) g.tokens.data<int64_t>()[r * new_tokens + t] = next.data<int64_t>()[r];
  };
  NamedTensors in = d.prefill_inputs;
  in[kDecoderIds] = prompt;
  auto t0 = std::chrono::steady_clock::now();
  d.prefill(in, d.prefill_out);
  Tensor next = sampler.next(output(d.prefill_out, kDecoderLogits));
  g.first_token_ms = ms_since(t0);
  keep(next, 0);
  const NamedTensors* out = &d.prefill_out;
  std::vector<std::string> presents;  // present_of(pasts[i]), named once rather than per step
  for (const std::string& past : d.pasts) presents.push_back(present_of(past));
  for (int64_t t = 1; t < new_tokens; ++t) {
    t0 = std::chrono::steady_clock::now();
    in[kDecoderIds] = next;
    for (size_t i = 0; i < d.pasts.size(); ++i) in[d.pasts[i]] = output(*out, presents[i]);
    d.step(in, d.step_out);
    out = &d.step_out;
    next = sampler.next(output(d.step_out, kDecoderLogits));
    g.step_ms.push_back(ms_since(t0));
    keep(next, t);
  }
  return g;
}

void check_token_ids(const Tensor& ids, int64_t vocab, const std::string& name) {
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (ids.data<int64_t>()[i] < 0 || ids.data<int64_t>()[i] >= vocab)
      throw GafError(name + ": id " + std::to_string(ids.data<int64_t>()[i]) + " at " + std::to_string(i) +
                     " is outside the vocabulary 0.." + std::to_string(vocab - 1));
}

void GenerationTimes::add(const Generation& g) {
  first_ms.push_back(g.first_token_ms);
  step_ms.insert(step_ms.end(), g.step_ms.begin(), g.step_ms.end());
}

std::string GenerationTimes::text() const {
  if (first_ms.empty()) return "";
  char line[256];
  std::snprintf(line, sizeof line, "time to first token: median %.3f ms (prefill + argmax; min %.3f, max %.3f)\n",
                percentile(first_ms, 0.5), percentile(first_ms, 0), percentile(first_ms, 1));
  std::string s = line;
  if (step_ms.empty()) return s;
  const double med = percentile(step_ms, 0.5);
  std::snprintf(
      line, sizeof line, "decode: median %.3f ms per token (p10 %.3f, p90 %.3f, max %.3f; %zu steps), %.0f tokens/s\n",
      med, percentile(step_ms, 0.1), percentile(step_ms, 0.9), percentile(step_ms, 1), step_ms.size(), 1000.0 / med);
  return s + line;
}

std::string first_token_difference(const Tensor& got, Tensor want, const std::string& want_name) {
  const int64_t b = got.shape()[0], n = got.shape()[1];
  if (want.shape().size() == 1 && b == 1) want = want.reshaped({1, want.shape()[0]});
  if (want.dtype() != DType::Int64 || want.shape().size() != 2 || want.shape()[0] != b || want.shape()[1] < n)
    throw GafError(want_name + ": is " + dtype_name(want.dtype()) + " " + shape_str(want.shape()) +
                   ", expected int64 [" + std::to_string(b) + ", >= " + std::to_string(n) + "]");
  const int64_t m = want.shape()[1];
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < b; ++r) {
      const int64_t g = got.data<int64_t>()[r * n + t], w = want.data<int64_t>()[r * m + t];
      if (g != w)
        return "new token " + std::to_string(t) + (b > 1 ? " of row " + std::to_string(r) : "") + " is " +
               std::to_string(g) + ", " + want_name + " has " + std::to_string(w);
    }
  return "";
}

}  // namespace gaf
