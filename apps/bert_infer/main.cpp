// bert_infer: runs the BERT-base encoder compiled ahead of time by `gaf compile` (the library
// `bert`: bert.a, bert.h, bert.plan.json, bert.weights). Links that library and gaf's plan
// runtime only — no Halide compiler. Prints the load time, the median forward time and each
// output's checksum; --output-dir writes the outputs as .npy, --profile the time per group.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "bert.h"
#include "runtime/plan_runner.h"
#include "runtime/process_memory.h"
#include "runtime/tensor_io.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run(const std::string& plan, const std::vector<std::string>& input_specs, const std::string& out_dir, int repeat,
        bool profile, unsigned seed) {
  using namespace gaf;
  if (repeat < 1) throw GafError("--repeat must be at least 1");
  if (!out_dir.empty()) prepare_output_folder(out_dir, "--output-dir");
  RegularFile(plan, "plan file");  // a directory or FIFO named as the plan: one line, not a crash
  auto t0 = std::chrono::steady_clock::now();
  PlanRunner runner(plan, bert_library);
  std::printf("plan: %s: %zu groups, arena %.2f MB (lower bound %.2f MB), %.1f MB of weights, loaded in %.1f ms\n",
              plan.c_str(), runner.group_count(), runner.arena_bytes() / 1e6, runner.arena_lower_bound() / 1e6,
              runner.weight_bytes() / 1e6, ms_since(t0));

  std::map<std::string, Tensor> inputs;
  for (const std::string& spec : input_specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw GafError("--input '" + spec + "': expected NAME=FILE.npy");
    inputs[spec.substr(0, eq)] = read_npy(spec.substr(eq + 1));
  }
  if (inputs.empty()) {  // generated: float N(0,1) (an attention mask all ones), int64 zeros
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    for (const auto& in : runner.inputs()) {
      Tensor t(in.dtype, in.shape);
      bool mask = in.name.find("mask") != std::string::npos;
      if (in.dtype == DType::Float32)
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = mask ? 1.0f : normal(rng);
      if (in.dtype == DType::Bool) std::fill(t.data<uint8_t>(), t.data<uint8_t>() + t.numel(), 1);
      inputs[in.name] = t;
    }
    std::printf("inputs: none given, using generated inputs (seed %u)\n", seed);
  }

  std::map<std::string, Tensor> outs = runner.run(inputs);  // warm-up
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto r0 = std::chrono::steady_clock::now();
    outs = runner.run(inputs);
    times.push_back(ms_since(r0));
  }
  std::sort(times.begin(), times.end());
  std::printf("forward (AOT): median %.2f ms over %d run(s)\n", times[times.size() / 2], repeat);
  if (profile) {
    runner.set_profiling(true);
    runner.run(inputs);
    std::printf("profile (one run): group, ms\n");
    for (size_t s = 0; s < runner.group_count(); ++s)
      std::printf("  %-60s %9.3f ms\n", runner.group_label(s).c_str(), runner.group_ms()[s]);
  }
  // Weights, arena, inputs and outputs, the kernels and the Halide runtime: no compiler here.
  std::printf("peak RSS %.1f MB (weights %.1f MB)\n", peak_rss_bytes() / 1e6, runner.weight_bytes() / 1e6);
  std::vector<std::string> names;
  for (const auto& o : runner.outputs()) names.push_back(o.name);
  const std::vector<std::string> paths = out_dir.empty() ? names : output_npy_paths(out_dir, names);
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = outs.at(names[i]);
    double sum = 0, abs_sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      sum += t.as_double(i);
      abs_sum += std::fabs(t.as_double(i));
    }
    std::printf("output %s: %s%s sum=%.6e abs_sum=%.6e\n", names[i].c_str(), dtype_name(t.dtype()),
                shape_str(t.shape()).c_str(), sum, abs_sum);
    if (!out_dir.empty()) {
      write_npy(paths[i], t);
      std::printf("wrote %s (output '%s')\n", paths[i].c_str(), names[i].c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bert_infer: the AOT-compiled BERT-base encoder (gaf compile), no Halide compiler"};
  std::string plan = BERT_PLAN_FILE;
  std::vector<std::string> inputs;
  std::string out_dir;
  int repeat = 5;
  bool profile = false;
  unsigned seed = 0;
  app.add_option("--plan", plan, "the plan file gaf compile wrote")->capture_default_str();
  app.add_option("--input", inputs, "NAME=FILE.npy (repeatable); default: generated inputs");
  app.add_option("--output-dir", out_dir, "write DIR/NAME.npy for each output");
  app.add_option("--repeat", repeat, "timed forward passes after the warm-up")->capture_default_str();
  app.add_flag("--profile", profile, "print the time of each group (one extra run)");
  app.add_option("--seed", seed, "seed of generated inputs")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    return run(plan, inputs, out_dir, repeat, profile, seed);
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "bert_infer: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bert_infer: internal error: %s\n", e.what());
    return 2;
  }
}
