// gaf generate: greedy autoregressive decoding with a decoder exported as Hugging Face optimum
// exports one (engine/generator.h): the prompt's prefill, then one step per token feeding the KV
// cache back. Prints time to first token, per-token decode latency and the generated ids;
// --compare checks them against a file of expected ids (exit 3 at the first difference).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "engine/generator.h"
#include "fusion/report/report.h"
#include "runtime/tensor_io.h"

namespace gaf::cli {

namespace {

struct GenerateArgs {
  std::string dir;
  FusionArgs fusion;
  CommonArgs common;
  int64_t prompt_len = 0;  // 0: the whole --input-ids file, else required
  int64_t new_tokens = 128;
  int64_t max_len = 0;  // 0: prompt + new tokens
  int repeat = 1;
  int warmup = 0;
  bool profile = false;
  Sampling sampling;
  std::string input_ids, compare;
};

// The prompt from --input-ids: int64 [batch, P], its first --prompt-len ids when given. Read
// before the models load, so that a bad file is reported at once.
Tensor read_prompt(const GenerateArgs& a) {
  Tensor t = read_tensor_file(a.input_ids);
  if (t.dtype() != DType::Int64 || t.shape().size() != 2 || t.shape()[1] < 1)
    throw GafError(a.input_ids + ": is " + dtype_name(t.dtype()) + " " + shape_str(t.shape()) +
                   ", expected int64 [batch, P] token ids");
  const int64_t b = t.shape()[0], len = t.shape()[1];
  if (a.prompt_len == 0 || a.prompt_len == len) return t;
  if (a.prompt_len > len)
    throw GafError("--prompt-len " + std::to_string(a.prompt_len) + ": " + a.input_ids + " has only " +
                   std::to_string(len) + " ids per row");
  Tensor p(DType::Int64, {b, a.prompt_len});
  for (int64_t r = 0; r < b; ++r)
    std::copy_n(t.data<int64_t>() + r * len, a.prompt_len, p.data<int64_t>() + r * a.prompt_len);
  return p;
}

// P seeded ids below the vocabulary size (no --input-ids).
Tensor generated_prompt(int64_t p, int64_t vocab_size) {
  Tensor t(DType::Int64, {1, p});
  std::mt19937 rng(0);
  for (int64_t i = 0; i < p; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % vocab_size);
  return t;
}

// --profile: a decode step's mean time split into its kernels, the executor between them and the
// loop around the step (next inputs, argmax), then the groups that take the most.
void print_profile(Generator& gen, const GenerationTimes& times) {
  const DecodeProfile& p = gen.profile();
  if (p.steps == 0) return;
  double token_ms = 0;
  for (double ms : times.step_ms) token_ms += ms;
  token_ms /= static_cast<double>(times.step_ms.size());
  const double n = static_cast<double>(p.steps), kernels = p.kernel_ms() / n, run = p.run_ms / n;
  std::printf(
      "profile: a decode step, mean of %lld: %.3f ms = kernels %.3f ms (%zu groups) + executor %.3f ms + "
      "loop %.3f ms (next inputs, argmax)\n",
      static_cast<long long>(p.steps), token_ms, kernels, p.group_ms.size(), run - kernels, token_ms - run);
  const FusionPlan& plan = gen.step_engine().plan();
  std::vector<size_t> order(p.group_ms.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = s;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p.group_ms[x] > p.group_ms[y]; });
  const size_t shown = std::min<size_t>(order.size(), 12);
  std::printf("  the %zu slowest groups (mean ms per step):\n", shown);
  for (size_t i = 0; i < shown; ++i) {
    const FusionGroup& grp = plan.groups[order[i]];
    std::printf("  g%-4d %-17s %-32s %8.3f ms\n", grp.id, fusion_kind_name(grp.kind), grp.kernel.label.c_str(),
                p.group_ms[order[i]] / n);
  }
  // Per kernel label: where a step's kernel time goes, whatever the number of layers.
  std::map<std::string, std::pair<int, double>> by_label;
  for (size_t s = 0; s < p.group_ms.size(); ++s) {
    auto& [count, ms] = by_label[plan.groups[s].kernel.label];
    ++count;
    ms += p.group_ms[s] / n;
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> labels(by_label.begin(), by_label.end());
  std::sort(labels.begin(), labels.end(),
            [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
  std::printf("  by kernel label (groups, ms per step):\n");
  for (const auto& [label, cm] : labels) std::printf("  %-32s %4d %8.3f ms\n", label.c_str(), cm.first, cm.second);
}

std::string dims_text(const ModelOptions& m) {
  std::string s;
  for (const auto& [name, v] : m.dims) s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  for (const auto& [name, r] : m.dim_ranges) s += (s.empty() ? "" : ", ") + name + "=" + r.str();
  return s;
}

int generate(const GenerateArgs& a) {
  a.common.apply();
  if (a.new_tokens < 1) throw GafError("--new-tokens: must be at least 1");
  if (a.repeat < 1 || a.warmup < 0) throw GafError("--repeat: must be at least 1, --warmup at least 0");
  a.sampling.check();
  ModelArgs none;
  EngineOptions base = engine_options(none, a.fusion, a.common);
  std::optional<Tensor> from_file;
  if (!a.input_ids.empty())
    from_file = read_prompt(a);
  else if (a.prompt_len < 1)
    throw GafError("--prompt-len: give a length of at least 1 (or --input-ids FILE)");
  const int64_t batch = from_file ? from_file->shape()[0] : 1, p = from_file ? from_file->shape()[1] : a.prompt_len;
  const int64_t max_len = a.max_len ? a.max_len : std::max<int64_t>(p + a.new_tokens, 2);
  auto t0 = std::chrono::steady_clock::now();
  Generator gen(a.dir, batch, max_len, base);
  if (!gen.step_engine().precision_note().empty()) spdlog::warn("{}", gen.step_engine().precision_note());
  if (from_file) check_token_ids(*from_file, gen.vocab(), a.input_ids);
  const Tensor prompt = from_file ? *from_file : generated_prompt(p, gen.vocab());
  gen.compile();
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("model: %s (prefill: %s; step: %s)\n", a.dir.c_str(), dims_text(gen.dims().prefill).c_str(),
              dims_text(gen.dims().step).c_str());
  std::printf("load + compile: %.2f s\n", compile_s);
  GenerationTimes times;
  Generation g;
  for (int r = 0; r < a.warmup; ++r) gen.generate(prompt, a.new_tokens, a.sampling);
  if (a.profile) gen.set_profiling(true);
  for (int r = 0; r < a.repeat; ++r) {
    g = gen.generate(prompt, a.new_tokens, a.sampling);
    times.add(g);
  }
  const int64_t prompt_len = prompt.shape()[1];
  std::printf("prompt: %lld ids%s, %lld new tokens (%s), %d round(s)\n", static_cast<long long>(prompt_len),
              a.input_ids.empty() ? " (generated, seed 0)" : (" from " + a.input_ids).c_str(),
              static_cast<long long>(a.new_tokens), a.sampling.str().c_str(), a.repeat);
  std::fputs(times.text().c_str(), stdout);
  if (a.profile) print_profile(gen, times);
  const int64_t n = g.tokens.shape()[1], shown = a.common.verbose ? g.tokens.numel() : std::min<int64_t>(16, n);
  std::string ids;
  for (int64_t i = 0; i < shown; ++i) ids += (i ? " " : "") + std::to_string(g.tokens.data<int64_t>()[i]);
  std::printf("generated: %s%s\n", ids.c_str(), shown < g.tokens.numel() ? " ... (-v: all)" : "");
  if (a.compare.empty()) return 0;
  const std::string diff = first_token_difference(g.tokens, read_tensor_file(a.compare), a.compare);
  if (!diff.empty()) {
    std::fprintf(stderr, "gaf: %s\n", diff.c_str());
    return 3;
  }
  std::printf("compare: all %lld tokens equal %s\n", static_cast<long long>(g.tokens.numel()), a.compare.c_str());
  return 0;
}

}  // namespace

Action add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand(
      "generate",
      "text generation with a KV cache, greedy or sampled: MODEL_DIR holds decoder_model.onnx and "
      "decoder_with_past_model.onnx (as Hugging Face optimum exports a decoder), optimum's decoder_model_merged.onnx, "
      "or one model.onnx with past inputs; prefill on the prompt, then one step per new token; prints time "
      "to first token, per-token latency and the ids (exit 3 when --compare differs)");
  c->add_option("model_dir", a->dir, "folder with decoder_model.onnx and decoder_with_past_model.onnx, or model.onnx")
      ->required();
  c->add_option("--prompt-len", a->prompt_len, "prompt length: the first P ids of --input-ids, or P generated ids");
  c->add_option("--new-tokens", a->new_tokens, "tokens to generate")->capture_default_str();
  c->add_option("--input-ids", a->input_ids, "int64 [batch, P] prompt ids (.npy or .pb)");
  c->add_option("--compare", a->compare, "int64 [batch, >= N] expected ids: exit 3 at the first differing token");
  c->add_option("--max-len", a->max_len,
                "longest sequence the engines are prepared for (dynamic dims; default prompt + new tokens)");
  c->add_option("--repeat", a->repeat, "generate this many times; times are over all rounds")->capture_default_str();
  c->add_option("--warmup", a->warmup, "untimed generations before them")->capture_default_str();
  c->add_option("--temperature", a->sampling.temperature, "sample with this temperature (0: greedy)")
      ->capture_default_str();
  c->add_option("--top-k", a->sampling.top_k, "sampling: only the k most likely tokens (0: all)")
      ->capture_default_str();
  c->add_option("--top-p", a->sampling.top_p, "sampling: the fewest most likely tokens whose probability reaches p")
      ->capture_default_str();
  c->add_option("--seed", a->sampling.seed, "sampling: the seed (the same seed gives the same tokens)")
      ->capture_default_str();
  c->add_flag("--profile", a->profile,
              "split a decode step's time into its kernels, the executor and the loop; list the slowest groups");
  a->fusion.add_to(c);
  a->common.add_to(c);
  return [a] { return generate(*a); };
}

}  // namespace gaf::cli
