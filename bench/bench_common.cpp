#include "bench/bench_common.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>

#include "fusion/frontend/passes.h"
#include "generators/reference_executor.h"

namespace gaf::bench {

double median(std::vector<double> v) {
  if (v.empty()) return kNone;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double time_ms(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<Timing> interleaved_medians(const std::vector<std::function<double()>>& variants, int rounds,
                                        const std::vector<int>& max_rounds, const std::vector<std::string>& names,
                                        int pause_ms) {
  const size_t n = variants.size();
  // Optionally idle before each run, so the previous variant's spinning worker threads are asleep.
  // Off by default: on this VM a run after 250 ms idle is slower (oneDNN 67 -> 90 ms, ours 68 ->
  // 72 ms at BERT seq 128), a cold start nobody serves; the one peer that spun long (OpenBLAS
  // under PyTorch, ~0.1 s) is told not to (torch_bert.py).
  auto settle = [pause_ms] {
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  };
  std::vector<std::vector<double>> times(n);
  auto entry = [&](size_t v, double ms) { return "  " + names[v] + " " + std::to_string(ms).substr(0, 7); };
  if (!names.empty()) {
    // One untimed round first (slow peers with a round limit excepted): right after every variant
    // was built, the first round ran 1.5-2x slow for all of them (BERT seq 128: ours 120-133 ms,
    // oneDNN 92-107 ms, against 66-72 ms later), which a median of 5-7 rounds still feels.
    std::string line;
    for (size_t v = 0; v < n; ++v)
      if (v >= max_rounds.size() || max_rounds[v] == 0) {
        settle();
        line += entry(v, variants[v]());
      }
    std::fprintf(stderr, "  untimed round:%s\n", line.c_str());
  }
  // Slow peers (a round limit) run after the interleaved rounds: run between the others, the
  // variant after PyTorch ran 15-35 ms slower at BERT seq 128 (its process still busy).
  auto limited = [&](size_t v) { return v < max_rounds.size() && max_rounds[v] > 0; };
  auto run = [&](size_t v, std::string& line) {
    settle();
    times[v].push_back(variants[v]());
    if (v < names.size()) line += entry(v, times[v].back());
  };
  for (int r = 0; r < rounds; ++r) {
    std::string line;
    for (size_t i = 0; i < n; ++i)
      if (!limited((i + r) % n)) run((i + r) % n, line);
    if (!line.empty()) std::fprintf(stderr, "  round %d:%s\n", r + 1, line.c_str());
  }
  for (size_t v = 0; v < n; ++v) {
    if (!limited(v)) continue;
    std::string line;
    for (int r = 0; r < std::min(rounds, max_rounds[v]); ++r) run(v, line);
    if (!line.empty()) std::fprintf(stderr, "  after the rounds:%s\n", line.c_str());
  }
  std::vector<Timing> med;
  for (auto& t : times) med.push_back({median(t), *std::min_element(t.begin(), t.end())});
  return med;
}

Graph prepared(GraphBuilder& b) {
  Graph g = b.finish();
  ReferenceExecutor folder;
  prepare_graph(g, {},
                [&folder](const Node& n, const std::vector<const Tensor*>& in,
                          const std::vector<const TensorDesc*>& types) { return folder.run_node(n, in, types); });
  return g;
}

double matmul_flops(const Graph& g) {
  double flops = 0;
  for (const Node& n : g.nodes()) {
    if (n.op_type != "MatMul") continue;
    Shape a = g.value(n.inputs[0]).type.shape();
    flops += 2.0 * shape_numel(g.value(n.outputs[0]).type.shape()) * a.back();
  }
  return flops;
}

void set_rate(Row& r, double flops, double peak_gflops) {
  r.gflops = flops / (r.ms * 1e6);
  if (peak_gflops > 0) r.pct_peak = 100.0 * r.gflops / peak_gflops;
}

}  // namespace gaf::bench
