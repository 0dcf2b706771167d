// aot_generate PROMPT.npy NEW_TOKENS [--compare EXPECTED.npy] [--repeat R] [--temperature T]
// [--top-k K] [--top-p P] [--seed S]: decoding, greedy or sampled as `gaf generate` samples
// (runtime/decode_loop.h, runtime/token_sampler.h) with the prefill and step libraries this project compiled from a
// decoder (CMakeLists.txt), run by the plan runtime. Prints time to first token, per-token
// latency and the ids; --compare exits 3 at the first token that differs from EXPECTED.npy.
//
// Each step feeds every present.X back as past_key_values.X (the prefill of a single-file or merged
// decoder reads them at length 0). The libraries were compiled with
// --kv-cache-capacity: each present.X is a window of a block the runner keeps, and a step writes
// only its new row into it (no copy of the cache per token), as `gaf generate` does.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "prefill.h"  // generated: prefill_library
#include "runtime/decode_loop.h"
#include "runtime/plan_runner.h"
#include "runtime/tensor_io.h"
#include "step.h"  // generated: step_library

namespace {

constexpr const char* kUsage =
    "usage: aot_generate PROMPT.npy NEW_TOKENS [--compare EXPECTED.npy] [--repeat R] [--temperature T] [--top-k K] "
    "[--top-p P] [--seed S]\n";

double number(const std::string& text, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw gaf::GafError(std::string(what) + " '" + text + "': expected a number");
  return v;
}

// A whole number >= `least` (NEW_TOKENS, --repeat, --top-k, --seed).
int64_t whole(const std::string& text, const char* what, int64_t least) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < least)
    throw gaf::GafError(std::string(what) + " '" + text + "': expected a whole number >= " + std::to_string(least));
  return v;
}

gaf::DecoderRun run_of(gaf::PlanRunner& runner) {
  return [&runner](const gaf::NamedTensors& in, gaf::NamedTensors& out) { runner.run(in, out); };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (argc - 3) % 2 != 0) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  try {
    const std::string prompt_file = argv[1];
    const int64_t new_tokens = whole(argv[2], "NEW_TOKENS", 1);
    std::string compare;
    int64_t repeat = 1;
    gaf::Sampling sampling;
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--compare")
        compare = argv[i + 1];
      else if (flag == "--repeat")
        repeat = whole(argv[i + 1], "--repeat", 1);
      else if (flag == "--temperature")
        sampling.temperature = number(argv[i + 1], "--temperature");
      else if (flag == "--top-k")
        sampling.top_k = whole(argv[i + 1], "--top-k", 0);
      else if (flag == "--top-p")
        sampling.top_p = number(argv[i + 1], "--top-p");
      else if (flag == "--seed")
        sampling.seed = static_cast<uint64_t>(whole(argv[i + 1], "--seed", 0));
      else
        throw gaf::GafError("unknown option '" + flag + "'\n" + kUsage);
    }
    sampling.check();
    const gaf::Tensor prompt = gaf::read_npy(prompt_file);
    gaf::PlanRunner prefill(PREFILL_PLAN_FILE, prefill_library), step(STEP_PLAN_FILE, step_library);
    if (prompt.dtype() != gaf::DType::Int64)
      throw gaf::GafError(prompt_file + ": is " + gaf::dtype_name(prompt.dtype()) + ", expected int64 token ids");
    for (const auto& out : prefill.outputs())
      if (out.name == gaf::kDecoderLogits) gaf::check_token_ids(prompt, out.shape.back(), prompt_file);
    gaf::DecoderLoop decoder{run_of(prefill), run_of(step), {}, {}, {}, {}};
    for (const auto& in : step.inputs())
      if (in.name != gaf::kDecoderIds) decoder.pasts.push_back(in.name);
    // A single-file or merged decoder's prefill reads every past as a tensor of length 0.
    for (const auto& in : prefill.inputs())
      if (in.name != gaf::kDecoderIds) decoder.prefill_inputs[in.name] = gaf::Tensor(in.dtype, in.shape);

    gaf::GenerationTimes times;
    gaf::Generation g;
    for (int64_t r = 0; r < repeat; ++r) {
      g = gaf::decode_tokens(decoder, prompt, new_tokens, sampling);
      times.add(g);
    }
    std::printf("aot_generate: prompt %s, %lld new tokens (%s), %lld round(s); prefill %zu groups, step %zu groups\n",
                gaf::shape_str(prompt.shape()).c_str(), static_cast<long long>(new_tokens), sampling.str().c_str(),
                static_cast<long long>(repeat), prefill.group_count(), step.group_count());
    std::fputs(times.text().c_str(), stdout);
    std::string ids;
    for (int64_t i = 0; i < g.tokens.numel(); ++i) ids += (i ? " " : "") + std::to_string(g.tokens.data<int64_t>()[i]);
    std::printf("generated: %s\n", ids.c_str());
    if (compare.empty()) return 0;
    const std::string diff = gaf::first_token_difference(g.tokens, gaf::read_npy(compare), compare);
    if (!diff.empty()) {
      std::fprintf(stderr, "aot_generate: %s\n", diff.c_str());
      return 3;
    }
    std::printf("compare: all %lld tokens equal %s\n", static_cast<long long>(g.tokens.numel()), compare.c_str());
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "aot_generate: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
