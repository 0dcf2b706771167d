// Section "dynamic": builtin:bert-base (batch 1) from one engine prepared for seq 1..512 (one
// kernel per group and size class, extents symbolic) against an engine specialised to each
// measured seq, timed interleaved in the same rounds. Target: dynamic within 1.1x everywhere.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "bench/bench_common.h"
#include "engine/engine.h"

namespace gaf::bench {
namespace {

TensorMap bert_inputs(int64_t seq) {
  Tensor x(DType::Float32, {1, seq, 768}), mask(DType::Float32, {1, seq});
  uint32_t s = 12345;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    x.data<float>()[i] = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  }
  for (int64_t i = 0; i < seq; ++i) mask.data<float>()[i] = 1.0f;
  return {{"hidden_states", x}, {"attention_mask", mask}};
}

double max_rel(const Tensor& a, const Tensor& b) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(b.data<float>()[i])));
  for (int64_t i = 0; i < b.numel(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  return scale > 0 ? worst / scale : worst;
}

}  // namespace

void run_dynamic_section(const BenchOptions& o, std::vector<Row>& rows) {
  const int64_t hi = 512;
  EngineOptions dyn;
  dyn.model.layers = o.layers;
  dyn.model.dim_ranges["seq"] = {1, hi};
  auto t0 = std::chrono::steady_clock::now();
  Engine dynamic("builtin:bert-base", dyn);
  dynamic.compile();
  const double dyn_compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "dynamic: one engine for seq 1..%lld compiled in %.1f s (%zu size classes)\n",
               static_cast<long long>(hi), dyn_compile, dynamic.compile().numbering.classes.size());
  for (int64_t seq : o.dynamic_seqs) {
    if (seq < 1 || seq > hi) continue;
    EngineOptions fixed;
    fixed.model.layers = o.layers;
    fixed.model.seq = seq;
    Engine specialised("builtin:bert-base", fixed);
    specialised.compile();
    const TensorMap in = bert_inputs(seq);
    TensorMap dyn_out, spec_out;
    dynamic.run(in, dyn_out);
    specialised.run(in, spec_out);
    const double diff = max_rel(dyn_out.begin()->second, spec_out.begin()->second);
    std::vector<Timing> t = interleaved_medians({[&] { return time_ms([&] { dynamic.run(in, dyn_out); }); },
                                                 [&] { return time_ms([&] { specialised.run(in, spec_out); }); }},
                                                o.repeat);
    const std::string what = "bert-base " + std::to_string(o.layers) + " layers, seq " + std::to_string(seq);
    Row d{"dynamic", what, "ours dynamic (seq 1.." + std::to_string(hi) + ")"};
    d.ms = t[0].median_ms;
    d.min_ms = t[0].min_ms;
    d.max_rel_diff = diff;
    const double ratio = t[0].median_ms / t[1].median_ms;
    char target[96];
    std::snprintf(target, sizeof target, "<= 1.1x specialised: %s (%.2fx)", ratio <= 1.1 ? "yes" : "no", ratio);
    d.target = target;
    Row s{"dynamic", what, "ours specialised"};
    s.ms = t[1].median_ms;
    s.min_ms = t[1].min_ms;
    rows.push_back(d);
    rows.push_back(s);
  }
}

}  // namespace gaf::bench
