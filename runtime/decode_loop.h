// Autoregressive decoding over two runs of a decoder exported as Hugging Face optimum exports
// one: a prefill (input_ids [batch, P] -> logits, present.*) and a step (input_ids [batch, 1],
// past_key_values.* -> logits, present.*), present.X fed back as past_key_values.X; each next
// token greedy or sampled (runtime/token_sampler.h). A decoder exported as one file with past
// inputs is the same two runs of that file, the prefill given pasts of length 0.
// Halide-free: the JIT Generator (engine/generator.h) and AOT apps linking a compiled decoder
// (apps/aot_generate) share this loop; each supplies its runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "runtime/token_sampler.h"

namespace gaf {

using NamedTensors = std::map<std::string, Tensor>;

// The decoder files' tensor names.
constexpr const char* kDecoderIds = "input_ids";
constexpr const char* kDecoderLogits = "logits";
constexpr const char* kDecoderPastPrefix = "past_key_values.";
constexpr const char* kDecoderPresentPrefix = "present.";

// "past_key_values.0.key" -> "present.0.key".
std::string present_of(const std::string& past);

// One run of the prefill or the step: writes its outputs into `outputs`, which the loop keeps
// across runs and generations so a runner may reuse their tensors (the JIT engine's cache blocks).
using DecoderRun = std::function<void(const NamedTensors& inputs, NamedTensors& outputs)>;

struct Generation {
  Tensor tokens;                // int64 [batch, new_tokens]
  double first_token_ms = 0;    // the prefill and the first argmax
  std::vector<double> step_ms;  // each later token: feeding present back, one step, the argmax
};

struct DecoderLoop {
  DecoderRun prefill, step;
  std::vector<std::string> pasts;  // the step's past_key_values.* inputs
  NamedTensors prefill_out, step_out;
  // Inputs of the prefill besides input_ids: a single-file decoder's pasts of length 0.
  NamedTensors prefill_inputs;
};

// The prompt's prefill gives token 0, each of the new_tokens - 1 steps feeds the previous token
// and every present.X of the run before as past_key_values.X; tokens are chosen by `sampling`
// (its seed restarts with every call: the same call gives the same tokens). `prompt` is int64
// [batch, P]; GafError when it is not, when new_tokens < 1 or sampling is out of range. Bounds
// on P + new_tokens are the runs' own.
Generation decode_tokens(DecoderLoop& d, const Tensor& prompt, int64_t new_tokens, const Sampling& sampling = {});

// GafError naming `name` and the first id of `ids` (int64) outside 0..vocab-1: an embedding
// Gather must never be handed one.
void check_token_ids(const Tensor& ids, int64_t vocab, const std::string& name);

// The timings of rounds of generation, printed the same by every tool that generates.
struct GenerationTimes {
  std::vector<double> first_ms, step_ms;
  void add(const Generation& g);
  // "time to first token: median ... ms ...\ndecode: median ... ms per token (...), N tokens/s\n"
  // (the decode line only when there were steps).
  std::string text() const;
};

// Empty when `got` [B, N] equals the first N ids of each row of `want` ([B, M] or, for B = 1,
// [M]; M >= N); else one line naming the first differing token. GafError naming `want_name`
// when `want` is not int64 of such a shape.
std::string first_token_difference(const Tensor& got, Tensor want, const std::string& want_name);

// The index of the largest logit at the last position of each row of logits [batch, seq, vocab]
// (the first on a tie, as torch.argmax), as int64 [batch, 1].
Tensor last_position_argmax(const Tensor& logits);

}  // namespace gaf
