// Section "matmul": each BERT-base MatMul shape with its epilogue, ours (one fused group run by
// the Engine) against oneDNN's matmul with the same post-ops, on the same inputs.
#include <cstdio>
#include <memory>
#include <random>

#include "bench/bench_common.h"
#include "engine/engine.h"
#include "runtime/tensor.h"
#include "schedules/host_target.h"
#include "schedules/schedule_db.h"
#if GAF_HAVE_DNNL
#include "bench/onednn_peer.h"
#endif

namespace gaf::bench {
namespace {

enum class Epi { Bias, BiasGelu, BiasResidual };
const char* epi_name(Epi e) { return e == Epi::Bias ? "bias" : e == Epi::BiasGelu ? "bias+gelu" : "bias+residual"; }

struct Shape3 {
  int64_t K, N;
  Epi epi;
  const char* where;  // the BERT layer's MatMul
};

// BERT-base's four MatMul shapes (per row of the activation), with the epilogue each has there.
const Shape3 kShapes[] = {
    {768, 768, Epi::BiasResidual, "attention output"},
    {768, 2304, Epi::Bias, "fused QKV"},
    {768, 3072, Epi::BiasGelu, "FFN1"},
    {3072, 768, Epi::BiasResidual, "FFN2"},
};

Tensor normal(Shape s, float stddev, uint32_t seed) {
  Tensor t(DType::Float32, std::move(s));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// y = epilogue(x @ W + b), x [B,S,K], as fusion/models/bert.cpp writes it (GELU decomposed).
Graph matmul_graph(int64_t B, int64_t S, const Shape3& s) {
  GraphBuilder g("matmul_" + std::string(epi_name(s.epi)));
  ValueRef x = g.input("x", DType::Float32, {B, S, s.K});
  ValueRef h = g.add(g.matmul(x, g.weight("W", normal({s.K, s.N}, 0.02f, 1))), g.weight("b", normal({s.N}, 0.02f, 2)));
  if (s.epi == Epi::BiasGelu) {
    ValueRef e = g.erf(g.div(h, g.scalar(1.4142135381698608f)));
    h = g.mul(g.mul(h, g.add(e, g.scalar(1.0f))), g.scalar(0.5f));
  } else if (s.epi == Epi::BiasResidual) {
    h = g.add(h, g.input("r", DType::Float32, {B, S, s.N}));
  }
  g.output(h, "y");
  return prepared(g);
}

// The default MatMul parameters with `alt` ("k_block=0,rows=6") applied; "pack=0": weights
// not packed at load.
struct AltParams {
  MatMulParams m;
  bool pack = true;
};
AltParams alt_params(const std::string& alt) {
  AltParams r{host_params_for(host_target()).matmul};
  MatMulParams& m = r.m;
  size_t pos = 0;
  while (pos < alt.size()) {
    size_t end = alt.find(',', pos);
    if (end == std::string::npos) end = alt.size();
    std::string kv = alt.substr(pos, end - pos);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) throw GafError("--matmul-alt: '" + kv + "' is not key=value");
    std::string key = kv.substr(0, eq);
    int64_t v = std::stoll(kv.substr(eq + 1));
    if (key == "vectors")
      m.vectors = static_cast<int>(v);
    else if (key == "rows")
      m.rows = static_cast<int>(v);
    else if (key == "k_unroll")
      m.k_unroll = static_cast<int>(v);
    else if (key == "a_block_bytes")
      m.a_block_bytes = v;
    else if (key == "k_block")
      m.k_block = static_cast<int>(v);
    else if (key == "pack")
      r.pack = v != 0;
    else
      throw GafError("--matmul-alt: unknown MatMul parameter '" + key + "'");
    pos = end + 1;
  }
  return r;
}

// A schedule database giving every group of `plan` the MatMul parameters `m`.
ScheduleDb alt_db(const FusionPlan& plan, const MatMulParams& m) {
  ScheduleDb db;
  for (const FusionGroup& grp : plan.groups) {
    TunedSchedule t;
    t.signature = grp.signature;
    t.target = "host";
    t.machine = host_machine_key();
    t.matmul = m;
    t.rows = host_params_for(host_target()).rows;
    db.put(t);
  }
  return db;
}

}  // namespace

void run_matmul_section(const BenchOptions& o, std::vector<Row>& rows) {
  const int64_t S = 128;
  const int rounds = std::max(10, 10 * o.repeat);
  for (int64_t B : {int64_t{1}, int64_t{8}}) {
    for (const Shape3& s : kShapes) {
      char what[96];
      std::snprintf(what, sizeof what, "%lldx%lldx%lld %s (%s)", static_cast<long long>(B * S),
                    static_cast<long long>(s.K), static_cast<long long>(s.N), epi_name(s.epi), s.where);
      std::fprintf(stderr, "matmul %s...\n", what);
      Graph g = matmul_graph(B, S, s);
      TensorMap in = make_default_inputs(g, 0);
      Engine ours(Graph(g), EngineOptions{});  // the copy shares the weights
      const FusionPlan& plan = ours.plan();
      TensorMap ours_out = ours.run(in);  // warm-up
      TensorMap out;
      const double flops = matmul_flops(g);

      Row r{"matmul", what, "ours fused"};
      r.note = std::to_string(plan.groups.size()) + (plan.groups.size() == 1 ? " group" : " groups");
      std::vector<std::function<double()>> variants{[&] { return time_ms([&] { ours.run(in, out); }); }};
      std::unique_ptr<Engine> alt;
      ScheduleDb db;
      TensorMap alt_out;
      double alt_diff = 0;
      if (!o.matmul_alt.empty()) {
        AltParams ap = alt_params(o.matmul_alt);
        db = alt_db(plan, ap.m);
        EngineOptions ao;
        ao.schedules = &db;
        ao.pack_weights = ap.pack;
        alt = std::make_unique<Engine>(Graph(g), ao);
        alt->run(in, alt_out);  // warm-up
        alt_diff = max_rel_diff(alt_out, ours_out);
        variants.push_back([&] { return time_ms([&] { alt->run(in, alt_out); }); });
      }
#if GAF_HAVE_DNNL
      Epilogue e = s.epi == Epi::Bias       ? Epilogue::Bias
                   : s.epi == Epi::BiasGelu ? Epilogue::BiasGelu
                                            : Epilogue::BiasResidual;
      OnednnMatMul dnnl(B * S, s.K, s.N, e, *g.value("W").constant, *g.value("b").constant);
      Tensor dst(DType::Float32, {B, S, s.N});
      Tensor residual = in.count("r") ? in.at("r") : Tensor();
      dnnl.run(in.at("x"), residual, dst);  // warm-up
      const double diff = max_rel_diff({{"y", dst}}, ours_out);
      variants.push_back([&] { return time_ms([&] { dnnl.run(in.at("x"), residual, dst); }); });
#endif
      std::vector<Timing> med = interleaved_medians(variants, rounds);
      r.ms = med[0].median_ms;
      r.min_ms = med[0].min_ms;
      r.vs_fused = 1.0;
      set_rate(r, flops, o.peak_gflops);
      std::vector<Row> alt_row;  // listed after ours
      if (alt) {
        Row a{"matmul", what, "ours " + o.matmul_alt};
        a.ms = med[1].median_ms;
        a.min_ms = med[1].min_ms;
        a.vs_fused = a.ms / r.ms;
        a.max_rel_diff = alt_diff;  // against ours
        set_rate(a, flops, o.peak_gflops);
        alt_row.push_back(a);
        med.erase(med.begin() + 1);
      }
#if GAF_HAVE_DNNL
      Row d{"matmul", what, "oneDNN"};
      d.ms = med[1].median_ms;
      d.min_ms = med[1].min_ms;
      d.vs_fused = d.ms / r.ms;
      d.max_rel_diff = diff;
      set_rate(d, flops, o.peak_gflops);
      char t[64];
      std::snprintf(t, sizeof t, "ours >= 0.9x oneDNN: %s (%.2fx)", d.vs_fused >= 0.9 ? "yes" : "NO", d.vs_fused);
      r.target = t;
      for (Row& a : alt_row) {
        std::snprintf(t, sizeof t, "this / oneDNN: %.2fx", d.ms / a.ms);
        a.target = t;
      }
      rows.push_back(r);
      rows.insert(rows.end(), alt_row.begin(), alt_row.end());
      rows.push_back(d);
#else
      r.target = "oneDNN: not found, skipped";
      rows.push_back(r);
      rows.insert(rows.end(), alt_row.begin(), alt_row.end());
#endif
    }
  }
}

void run_bf16_section(const BenchOptions& o, std::vector<Row>& rows) {
  const int64_t S = 128;
  const int rounds = std::max(10, 10 * o.repeat);
  EngineOptions lp;
  lp.precision = Precision::Bf16;
  // MatMul + epilogue at BERT-base's shapes (batch 1): ours bf16 against oneDNN bf16 (src and
  // weights bf16, f32 accumulation and post-ops; src converted inside its run, as ours rounds A
  // as it reads it). max rel diff: against ours fp32.
  for (const Shape3& s : kShapes) {
    char what[96];
    std::snprintf(what, sizeof what, "%lldx%lldx%lld %s bf16 (%s)", static_cast<long long>(S),
                  static_cast<long long>(s.K), static_cast<long long>(s.N), epi_name(s.epi), s.where);
    std::fprintf(stderr, "bf16 matmul %s...\n", what);
    Graph g = matmul_graph(1, S, s);
    TensorMap in = make_default_inputs(g, 0);
    const TensorMap fp32_out = Engine(Graph(g), EngineOptions{}).run(in);
    Engine ours(Graph(g), lp);
    TensorMap out = ours.run(in);  // warm-up
    const double flops = matmul_flops(g);
    Row r{"bf16", what, "ours fused bf16"};
    r.max_rel_diff = max_rel_diff(out, fp32_out);
    std::vector<std::function<double()>> variants{[&] { return time_ms([&] { ours.run(in, out); }); }};
#if GAF_HAVE_DNNL
    Epilogue e = s.epi == Epi::Bias       ? Epilogue::Bias
                 : s.epi == Epi::BiasGelu ? Epilogue::BiasGelu
                                          : Epilogue::BiasResidual;
    OnednnMatMul dnnl(S, s.K, s.N, e, *g.value("W").constant, *g.value("b").constant, /*bf16=*/true);
    Tensor dst(DType::Float32, {1, S, s.N});
    Tensor residual = in.count("r") ? in.at("r") : Tensor();
    dnnl.run(in.at("x"), residual, dst);  // warm-up
    const double diff = max_rel_diff({{"y", dst}}, fp32_out);
    variants.push_back([&] { return time_ms([&] { dnnl.run(in.at("x"), residual, dst); }); });
#endif
    std::vector<Timing> med = interleaved_medians(variants, rounds);
    r.ms = med[0].median_ms;
    r.min_ms = med[0].min_ms;
    r.vs_fused = 1.0;
    set_rate(r, flops, o.peak_gflops);
#if GAF_HAVE_DNNL
    Row d{"bf16", what, "oneDNN bf16"};
    d.ms = med[1].median_ms;
    d.min_ms = med[1].min_ms;
    d.vs_fused = d.ms / r.ms;
    d.max_rel_diff = diff;
    set_rate(d, flops, o.peak_gflops);
    char t[64];
    std::snprintf(t, sizeof t, "ours >= 0.9x oneDNN bf16: %s (%.2fx)", d.vs_fused >= 0.9 ? "yes" : "NO", d.vs_fused);
    r.target = t;
    rows.push_back(r);
    rows.push_back(d);
#else
    r.target = "oneDNN: not found, skipped";
    rows.push_back(r);
#endif
  }
  // BERT-base seq 128 end to end, ours fused fp32 against bf16, interleaved.
  EngineOptions fo;
  fo.model.layers = o.layers;
  fo.model.seq = S;
  lp.model = fo.model;
  std::fprintf(stderr, "bf16 bert seq %lld...\n", static_cast<long long>(S));
  Engine fp32("builtin:bert-base", fo), bf16("builtin:bert-base", lp);
  const TensorMap in = make_default_inputs(fp32.graph(), 0);
  TensorMap out32 = fp32.run(in), out16 = bf16.run(in);  // warm-up
  const double diff = max_rel_diff(out16, out32);
  std::vector<Timing> med = interleaved_medians(
      {[&] { return time_ms([&] { fp32.run(in, out32); }); }, [&] { return time_ms([&] { bf16.run(in, out16); }); }},
      o.repeat, {}, {}, o.pause_ms);
  const std::string what = "builtin seq " + std::to_string(S) + " (" + std::to_string(o.layers) + " layers)";
  Row f{"bf16", what, "ours fused fp32"};
  f.ms = med[0].median_ms;
  f.min_ms = med[0].min_ms;
  f.vs_fused = 1.0;
  Row b{"bf16", what, "ours fused bf16"};
  b.ms = med[1].median_ms;
  b.min_ms = med[1].min_ms;
  b.vs_fused = b.ms / f.ms;
  b.max_rel_diff = diff;
  char t[64];
  std::snprintf(t, sizeof t, "bf16 <= 0.55x fp32: %s (%.2fx)", b.vs_fused <= 0.55 ? "yes" : "NO", b.vs_fused);
  b.target = t;
  rows.push_back(f);
  rows.push_back(b);
}

}  // namespace gaf::bench
