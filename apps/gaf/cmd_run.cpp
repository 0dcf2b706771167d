// gaf run: execute a model (today: the unfused reference, one Halide pipeline per op), print
// compile time, median forward time, and each output's shape and checksum; optionally save outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/gaf/commands.h"
#include "runtime/tensor_io.h"

namespace gaf::cli {

namespace {

struct RunArgs {
  ModelArgs model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int repeat = 1;
  uint32_t seed = 0;
};

std::string checksum(const Tensor& t) {
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.as_double(i);
    sum += v;
    abs_sum += std::fabs(v);
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "sum=%.6e abs_sum=%.6e", sum, abs_sum);
  return buf;
}

int run(const RunArgs& a) {
  TensorMap inputs;
  for (const std::string& spec : a.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw GafError("--input '" + spec + "': expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    if (inputs.count(name)) throw GafError("--input '" + name + "' is given twice");
    inputs[name] = read_tensor_file(spec.substr(eq + 1));
  }
  if (!a.output_dir.empty() && !std::filesystem::is_directory(a.output_dir))
    throw GafError("--output-dir '" + a.output_dir + "' is not a directory");
  if (a.repeat < 1) throw GafError("--repeat must be at least 1");

  ReferenceExecutor ex;
  auto t0 = std::chrono::steady_clock::now();
  LoadedModel m = load_model(a.model.model, a.model.resolved(), ex, inputs);
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Graph& g = m.graph;
  if (inputs.empty()) {
    inputs = make_default_inputs(g, a.seed);
    std::cout << "inputs: none given, using generated inputs (seed " << a.seed << ")\n";
  }
  check_graph_inputs(g, inputs);
  size_t weight_bytes = 0;
  for (const auto& [_, v] : g.values())
    if (v.constant) weight_bytes += v.constant->nbytes();
  std::printf("model: %s: %zu nodes, %.1f MB of weights, loaded in %.2f s (%d nodes folded)\n",
              m.description.c_str(), g.nodes().size(), weight_bytes / 1e6, load_s,
              m.passes.folded_nodes);

  ex.reset_stats();
  // The first forward compiles each distinct node kernel; it is reported apart from run time.
  auto c0 = std::chrono::steady_clock::now();
  TensorMap outs = ex.run(g, inputs);
  double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  ExecStats st = ex.stats();
  std::printf("compile: %d kernels (%d reused) in %.2f s [unfused reference: one pipeline per op]\n",
              st.kernels_compiled, st.kernel_cache_hits, st.compile_seconds);
  std::vector<double> times;
  for (int i = 0; i < a.repeat; ++i) {
    auto r0 = std::chrono::steady_clock::now();
    outs = ex.run(g, inputs);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("forward (unfused reference): median %.2f ms over %d run(s) (min %.2f, max %.2f; first run with compile %.2f s)\n",
              times[times.size() / 2], a.repeat, times.front(), times.back(), first_s);
  std::printf("peak intermediate memory: %.1f MB\n", st.peak_bytes / 1e6);
  for (const std::string& name : g.outputs()) {
    const Tensor& t = outs.at(name);
    std::printf("output %s: %s%s %s\n", name.c_str(), dtype_name(t.dtype()),
                shape_str(t.shape()).c_str(), checksum(t).c_str());
  }
  if (!a.output_dir.empty()) {
    for (const std::string& name : g.outputs()) {
      std::string file = name;
      std::replace_if(file.begin(), file.end(), [](char c) { return c == '/' || c == ':'; }, '_');
      std::string path = (std::filesystem::path(a.output_dir) / (file + ".npy")).string();
      write_npy(path, outs.at(name));
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = app.add_subcommand("run", "run a model and print time, output shapes and checksums");
  a->model.add_to(c);
  c->add_option("--input", a->inputs, "NAME=FILE.npy (or .pb), repeatable; default: generated inputs");
  c->add_option("--output-dir", a->output_dir, "write DIR/NAME.npy for each graph output");
  c->add_option("--repeat", a->repeat, "timed forward passes after the warm-up")->capture_default_str();
  c->add_option("--seed", a->seed, "seed of generated inputs")->capture_default_str();
  return [a] { return run(*a); };
}

}  // namespace gaf::cli
