// The next token from a decoder's logits: greedy (the largest logit, as torch.argmax) or sampled
// with a temperature, top-k and top-p (nucleus) cut and a seed. Sampling is reproducible: the
// same seed, logits and settings give the same ids on every machine (the generator is
// std::mt19937_64, whose sequence the standard fixes, and uniforms are made from its bits here,
// not by a library distribution). Halide-free (gaf_tensor).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "runtime/tensor.h"

namespace gaf {

struct Sampling {
  double temperature = 0;  // 0: greedy (top_k, top_p and seed are then unused)
  int64_t top_k = 0;       // keep the k largest logits; 0: all
  double top_p = 1.0;      // then the fewest most likely tokens whose probability reaches p; 1: all
  uint64_t seed = 0;
  bool greedy() const { return temperature == 0; }
  // GafError naming the setting when one is out of range (temperature < 0, top_k < 0,
  // top_p outside (0, 1]).
  void check() const;
  std::string str() const;  // "greedy" or "temperature 0.8, top-k 40, top-p 0.95, seed 1"
};

class TokenSampler {
 public:
  explicit TokenSampler(const Sampling& s);
  // The next id of each row from the last position of logits [batch, seq, vocab] (float32), as
  // int64 [batch, 1]. GafError when logits is not of that form.
  Tensor next(const Tensor& logits);

 private:
  int64_t sample_row(const float* row, int64_t vocab);
  Sampling s_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int64_t>> kept_;  // (logit, id), reused
  std::vector<double> probs_;
};

}  // namespace gaf
