// fusion_bench: for each fusion kind, the same graph run fused and unfused (every op its own
// group, same schedules), both through the Engine, at sizes beyond cache. Prints one markdown
// table: median times, speed-up, the planner's predicted bytes saved, achieved GB/s (or GFLOP/s
// for graphs with MatMuls) and the max relative difference fused vs unfused; then a streaming
// triad's GB/s in the same run, which the memory-bound rows are held against.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_common.h"
#include "engine/engine.h"
#include "fusion/frontend/passes.h"
#include "fusion/ir/builder.h"

namespace gaf {
namespace {

// Shared with gaf_bench (bench_common.h).
using bench::matmul_flops;
using bench::median;
using bench::prepared;

struct Row {
  std::string name, shape;
  double fused_ms = 0, unfused_ms = 0;
  int64_t bytes_saved = 0;
  double rate = 0;  // GB/s or GFLOP/s of the fused run
  const char* rate_unit = "";
  double max_rel_diff = 0;
  size_t groups_fused = 0, groups_unfused = 0;
  bool memory_bound = false;  // no MatMul: held against the triad's bandwidth
};

Tensor random_tensor(Shape s, float mean, float stddev, uint32_t seed) {
  Tensor t(DType::Float32, std::move(s));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(mean, stddev);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// The one measurement: `g` through the Engine fused and unfused (weights packed, as gaf run
// runs it), one warm-up run each, then `repeat` timed runs of each (interleaved, so load changes
// hit both alike), each into the same caller-owned outputs.
Row time_fused_vs_unfused(const std::string& name, const std::string& shape, const Graph& g, int repeat) {
  std::fprintf(stderr, "%s %s: planning and compiling...\n", name.c_str(), shape.c_str());
  TensorMap inputs = make_default_inputs(g, 0);
  EngineOptions off;
  off.fusion.enabled = false;
  Engine fused(Graph(g), EngineOptions(), name), unfused(Graph(g), off, name);  // copies share the weights
  TensorMap fused_out, unfused_out;
  fused.run(inputs, fused_out);  // warm-up
  unfused.run(inputs, unfused_out);

  std::vector<double> tf, tu;
  auto time_ms = [&](Engine& e, TensorMap& out) {
    auto t0 = std::chrono::steady_clock::now();
    e.run(inputs, out);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < repeat; ++i) {
    tf.push_back(time_ms(fused, fused_out));
    tu.push_back(time_ms(unfused, unfused_out));
  }

  Row r{name, shape};
  r.fused_ms = median(tf);
  r.unfused_ms = median(tu);
  r.groups_fused = fused.plan().groups.size();
  r.groups_unfused = unfused.plan().groups.size();
  int64_t traffic = 0;
  for (const FusionGroup& grp : fused.plan().groups) {
    r.bytes_saved += grp.bytes_saved();
    traffic += grp.bytes_fused;
  }
  double flops = matmul_flops(g);
  r.rate_unit = flops > 0 ? "GFLOP/s" : "GB/s";
  r.rate = (flops > 0 ? flops : static_cast<double>(traffic)) / (r.fused_ms * 1e6);
  r.memory_bound = flops == 0;
  r.max_rel_diff = max_rel_diff(fused_out, unfused_out);
  return r;
}

// The machine's streaming bandwidth in this run: STREAM's triad a = b + s * c over three float
// arrays of `n` elements (3 x 64 MB at n = 16M, far beyond cache), one contiguous slice per
// hardware thread, counted as STREAM counts it (12 bytes per element: two reads, one write), the
// same way the fused rows count their group inputs and outputs. Median of `repeat` runs.
double triad_gbps(int64_t n, int repeat) {
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);  // touched once here, not in the timed runs
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  auto run_slice = [&](int t) {
    int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0f * pc[i];
  };
  std::vector<double> t;
  for (int r = 0; r <= repeat; ++r) {  // the first run is a warm-up
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int k = 1; k < threads; ++k) pool.emplace_back(run_slice, k);
    run_slice(0);
    for (std::thread& th : pool) th.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) t.push_back(ms);
  }
  return 12.0 * static_cast<double>(n) / (median(t) * 1e6);
}

// ---- cases: each builds one graph --------------------------------------------------------------

// LayerNorm over the last axis as torch.onnx.export writes it (as fusion/models/bert.cpp).
Graph layer_norm_graph(int64_t B, int64_t S, int64_t H) {
  GraphBuilder g("layer_norm");
  ValueRef x = g.input("x", DType::Float32, {B, S, H});
  ValueRef gamma = g.weight("gamma", random_tensor({H}, 1.0f, 0.1f, 1));
  ValueRef beta = g.weight("beta", random_tensor({H}, 0.0f, 0.1f, 2));
  ValueRef d = g.sub(x, g.reduce_mean(x, {-1}));
  ValueRef var = g.reduce_mean(g.pow(d, g.scalar(2.0f)), {-1});
  ValueRef inv = g.sqrt(g.add(var, g.scalar(1e-12f)));
  g.output(g.add(g.mul(g.div(d, inv), gamma), beta), "y");
  return prepared(g);
}

// Five elementwise ops: ((sigmoid(x * 2 + y) - 0.5) * y.
Graph elementwise_graph(int64_t rows, int64_t cols) {
  GraphBuilder g("elementwise_chain");
  ValueRef x = g.input("x", DType::Float32, {rows, cols});
  ValueRef y = g.input("y", DType::Float32, {rows, cols});
  ValueRef t = g.op1("Sigmoid", {g.add(g.mul(x, g.scalar(2.0f)), y)});
  g.output(g.mul(g.sub(t, g.scalar(0.5f)), y), "z");
  return prepared(g);
}

// x @ W + b, then GELU decomposed (erf form) as Div/Erf/Add/Mul/Mul.
Graph matmul_gelu_graph(int64_t M, int64_t K, int64_t N) {
  GraphBuilder g("matmul_bias_gelu");
  ValueRef x = g.input("x", DType::Float32, {M, K});
  ValueRef W = g.weight("W", random_tensor({K, N}, 0.0f, 0.02f, 3));
  ValueRef b = g.weight("b", random_tensor({N}, 0.0f, 0.02f, 4));
  ValueRef h = g.add(g.matmul(x, W), b);
  ValueRef e = g.erf(g.div(h, g.scalar(1.4142135381698608f)));
  g.output(g.mul(g.mul(h, g.add(e, g.scalar(1.0f))), g.scalar(0.5f)), "y");
  return prepared(g);
}

// Softmax over the last axis, decomposed: exp(x - max) / sum(exp(x - max)).
Graph softmax_graph(const std::vector<int64_t>& dims) {
  GraphBuilder g("softmax");
  ValueRef x = g.input("x", DType::Float32, std::vector<Dim>(dims.begin(), dims.end()));
  Attributes axes;
  axes.set("axes", std::vector<int64_t>{-1});
  axes.set("keepdims", int64_t{1});
  ValueRef e = g.op1("Exp", {g.sub(x, g.op1("ReduceMax", {x}, axes))});
  g.output(g.div(e, g.op1("ReduceSum", {e}, axes)), "y");
  return prepared(g);
}

Graph bert_graph(int layers, int64_t seq) {
  EngineOptions o;
  o.model.layers = layers;
  o.model.seq = seq;
  return Engine("builtin:bert-base", o).graph();  // as loaded (not planned yet)
}

struct Case {
  std::string name, shape;
  std::function<Graph()> build;
};

std::vector<Case> cases() {
  return {
      {"layernorm", "8x512x768", [] { return layer_norm_graph(8, 512, 768); }},
      {"elementwise", "5 ops, 4096x4096", [] { return elementwise_graph(4096, 4096); }},
      {"matmul_gelu", "128x768x3072", [] { return matmul_gelu_graph(128, 768, 3072); }},
      {"softmax", "8x12x128x128",
       [] {
         return softmax_graph({8, 12, 128, 128});
       }},
      {"bert", "bert-base 12L seq 128", [] { return bert_graph(12, 128); }},
  };
}

int run(int repeat, const std::vector<std::string>& only) {
  std::vector<Row> rows;
  for (const Case& c : cases()) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
    Graph g = c.build();
    rows.push_back(time_fused_vs_unfused(c.name, c.shape, g, repeat));
  }
  const int64_t triad_n = int64_t{4096} * 4096;
  const double triad = triad_gbps(triad_n, repeat);
  std::printf("median of %d runs after one warm-up, fused and unfused interleaved, outputs reused\n\n", repeat);
  std::printf(
      "| case | shape | groups fused/unfused | fused ms | unfused ms | unfused/fused | "
      "bytes saved (MB) | fused rate | max rel diff |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %zu/%zu | %.2f | %.2f | %.2fx | %.1f | %.1f %s | %.2e |\n", r.name.c_str(),
                r.shape.c_str(), r.groups_fused, r.groups_unfused, r.fused_ms, r.unfused_ms, r.unfused_ms / r.fused_ms,
                r.bytes_saved / 1e6, r.rate, r.rate_unit, r.max_rel_diff);
  std::printf("| triad | a = b + 3c, 3 x %lld floats, %u threads | - | %.2f | - | - | - | %.1f GB/s | - |\n",
              static_cast<long long>(triad_n), std::max(1u, std::thread::hardware_concurrency()),
              12.0 * triad_n / (triad * 1e6), triad);
  std::printf("\nmemory-bound fused groups against the triad (target >= 70%%):\n");
  for (const Row& r : rows)
    if (r.memory_bound)
      std::printf("  %-12s %6.1f GB/s = %5.1f%% of the triad: %s\n", r.name.c_str(), r.rate, 100 * r.rate / triad,
                  r.rate >= 0.7 * triad ? "yes" : "NO");
  return 0;
}

}  // namespace
}  // namespace gaf

int main(int argc, char** argv) {
  CLI::App app("fusion_bench: fused vs unfused, per fusion kind, at sizes beyond cache");
  int repeat = 7;
  std::vector<std::string> only;
  app.add_option("--repeat", repeat, "timed runs per variant after the warm-up")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  std::vector<std::string> names;
  for (const gaf::Case& c : gaf::cases()) names.push_back(c.name);
  app.add_option("--only", only, "run only these cases (repeatable)")->check(CLI::IsMember(names));
  CLI11_PARSE(app, argc, argv);
  try {
    return gaf::run(repeat, only);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusion_bench: error: %s\n", e.what());
    return 2;
  }
}
