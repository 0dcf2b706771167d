// Greedy autoregressive decoding with a decoder exported as Hugging Face optimum exports one: two
// ONNX files in one folder, from the same weights,
//   decoder_model.onnx            input_ids [batch, seq] -> logits [batch, seq, vocab], present.*
//   decoder_with_past_model.onnx  input_ids [batch, 1], past_key_values.* -> logits, present.*
// (present.X is fed back as past_key_values.X). Each file is one Engine with dynamic dims, so one
// plan serves every length: the prefill over seq = 1..max_len, a step over past = 1..max_len-1
// with seq = 1. The dims' names are read from the files' inputs (decoder_dims), not assumed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "runtime/decode_loop.h"

namespace gaf {

// The decoder's files in `dir`: optimum's two (decoder_model.onnx, decoder_with_past_model.onnx),
// optimum's merged decoder (decoder_model_merged.onnx: an If on a bool input, `branch`, false
// for the prefill and true for a step; each value imported as its own graph), or one file with
// past inputs (model.onnx, or decoder_model.onnx alone) that serves both runs. A single or merged
// file's prefill reads pasts of length 0. GafError naming the folder when none is there.
struct DecoderFiles {
  std::string prefill, step;
  std::string branch;  // merged: the If's condition input (use_cache_branch)
  bool single() const { return prefill == step; }
  BranchConditions prefill_branch() const {
    return branch.empty() ? BranchConditions{} : BranchConditions{{branch, false}};
  }
  BranchConditions step_branch() const {
    return branch.empty() ? BranchConditions{} : BranchConditions{{branch, true}};
  }
};
DecoderFiles decoder_files(const std::string& dir);

// The --dim bindings of both engines, from the models' inputs: input_ids' dims are [batch, seq];
// every other dim symbol of a past_key_values.* input is the cache length (bound to 0 in the
// prefill of a single file). Throws GafError naming the file and input when the files do not
// have this form (an input without its present.* output, input_ids missing or not int64 [batch, seq]).
struct DecoderDims {
  ModelOptions prefill, step;
};
DecoderDims decoder_dims(const Graph& prefill, const Graph& step, const DecoderFiles& files, int64_t batch,
                         int64_t max_len);

// Where the decode steps' time went, summed over the steps since reset (Generator::set_profiling):
// the step engine's run (kernels and the executor's work between them) and each group's kernel.
// A token's time beyond run_ms is the loop's (binding the next inputs, the argmax).
struct DecodeProfile {
  int64_t steps = 0;
  double run_ms = 0;
  std::vector<double> group_ms;  // by the step plan's group index
  double kernel_ms() const;      // the groups' sum
};

class Generator {
 public:
  // `dir` holds the decoder's files (decoder_files); `base` carries everything but the dims (fusion controls,
  // threads). max_len bounds prompt + new tokens - 1 (the longest cache a step reads plus one).
  Generator(const std::string& dir, int64_t batch, int64_t max_len, EngineOptions base);
  ~Generator();

  // Compiles both engines' kernels (the first generate() does it otherwise).
  void compile();
  // The prompt's prefill gives token 0, each step feeds the previous token and the cache; tokens
  // greedy or sampled (runtime/token_sampler.h). `prompt` is int64 [batch, P]; GafError when
  // P < 1 or P + new_tokens - 1 > max_len.
  Generation generate(const Tensor& prompt, int64_t new_tokens, const Sampling& sampling = {});

  // Times every step's run and each of its groups from now on (or stops); resets the profile.
  void set_profiling(bool on);
  const DecodeProfile& profile() const { return profile_; }
  // The step engine (its plan and graph label the profile's groups).
  Engine& step_engine() { return *step_; }

  const DecoderDims& dims() const { return dims_; }
  int64_t vocab() const;  // logits' last dim
  int64_t max_len() const { return max_len_; }

 private:
  std::string dir_;
  DecoderFiles files_;
  int64_t batch_, max_len_;
  DecoderDims dims_;
  std::unique_ptr<Engine> prefill_, step_;

  // The loop over both engines. Its output maps outlive a generation: the next one reuses their
  // tensors (the cache blocks, logits) instead of allocating and faulting in fresh pages.
  DecoderLoop decoder_;
  bool profiling_ = false;
  DecodeProfile profile_;
};

}  // namespace gaf
