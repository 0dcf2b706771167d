// Sections "bert" and "onnx": BERT-base forwards (batch 1, each --seq), all variants timed
// interleaved in the same rounds: ours fused and unfused on builtin:bert-base, the oneDNN
// hand-fused encoder and PyTorch eager (same weights and inputs), and ours fused and unfused on
// the ONNX that torch.onnx.export writes for the PyTorch module (same weights again).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <optional>

#include "bench/bench_common.h"
#include "bench/memory_probe.h"
#include "bench/torch_peer.h"
#include "engine/engine.h"
#include "runtime/tensor_io.h"
#if GAF_HAVE_DNNL
#include "bench/onednn_peer.h"
#endif

#ifndef GAF_BENCH_DIR
#error "GAF_BENCH_DIR (the bench/ source folder, for torch_bert.py) must be defined"
#endif

namespace gaf::bench {
namespace {

void make_dir(const std::string& d) {
  if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) throw GafError("cannot create directory " + d);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Tensor only_output(const TensorMap& m) { return m.begin()->second; }

// A model through gaf's Engine, fused (with the planner's rewrites) or not, weights packed
// unless `pack` is off; runs write into the same outputs.
struct Ours {
  std::unique_ptr<Engine> engine;
  TensorMap out;
  double compile_s = 0;  // planning + JIT compile
  Ours(const Graph& g, bool fused, bool pack = true) {
    auto t0 = std::chrono::steady_clock::now();
    EngineOptions o;
    o.fusion.enabled = fused;
    o.pack_weights = pack;
    engine = std::make_unique<Engine>(Graph(g), o);  // the copy shares the weights
    engine->compile();
    compile_s = seconds_since(t0);
  }
  size_t groups() { return engine->plan().groups.size(); }
  void run(const TensorMap& in) { engine->run(in, out); }
  Tensor first_run(const TensorMap& in) {  // the warm-up, its output kept apart from later runs'
    return only_output(engine->run(in));
  }
};

struct Variant {
  std::string section, variant, note;
  std::function<double()> time;
  Tensor out;          // of the warm-up run, compared with ours fused (builtin)
  int max_rounds = 0;  // 0: every round
};

// Writes the builtin graph's layer weights (fusion/models/bert.cpp names and layouts) for torch_bert.py.
void write_weights(const Graph& g, const std::string& dir) {
  make_dir(dir);
  for (const auto& [name, v] : g.values())
    if (v.constant && name.rfind("encoder.layer.", 0) == 0 && name.find('/') == std::string::npos)
      write_npy(dir + "/" + name + ".npy", *v.constant);
}

Row skipped(const std::string& section, const std::string& what, const std::string& variant, const std::string& why) {
  Row r{section, what, variant};
  r.note = why;
  return r;
}

std::string fixed(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Ours fused in a process of its own (`argv`): the packed weights must replace the originals, so
// the run's peak RSS (weights, activations, code, and for the JIT the Halide/LLVM compiler) is
// checked against 1.3x the weights plus the activation arena at seq 128, 12 layers.
Row memory_row(const std::vector<std::string>& argv, const std::string& variant, const std::string& what, bool check) {
  std::string why;
  std::optional<RunMemory> m = run_memory(argv, why);
  if (!m) {
    Row r = skipped("bert", what, variant, why);
    if (check) r.target = "peak RSS <= 1.3x weights + arena: NO (not measured)";
    return r;
  }
  Row r{"bert", what, variant};
  const double limit = 1.3 * m->weights_mb + m->arena_mb;
  const bool ok = m->peak_rss_mb <= limit;
  r.note = fixed("peak RSS %.1f MB", m->peak_rss_mb) + fixed(" (%.2fx the weights)", m->peak_rss_mb / m->weights_mb) +
           fixed(": weights %.1f MB", m->weights_mb) + fixed(", arena %.1f MB", m->arena_mb);
  if (check)
    r.target = std::string("peak RSS <= 1.3x weights + arena: ") + (ok ? "yes" : "NO") +
               fixed(" (%.1f", m->peak_rss_mb) + (ok ? " <= " : " > ") + fixed("%.1f MB)", limit);
  return r;
}

}  // namespace

void run_bert_section(const BenchOptions& o, std::vector<Row>& rows) {
  const std::string script = std::string(GAF_BENCH_DIR) + "/torch_bert.py";
  const std::string torch_missing = torch_unavailable(o.python);
  if (!torch_missing.empty()) std::fprintf(stderr, "PyTorch: not found, skipped (%s)\n", torch_missing.c_str());
  const bool with_onnx = o.want("onnx") && torch_missing.empty();
  const bool with_builtin = o.want("bert");
  make_dir(o.work_dir);
  const std::string weights_dir = o.work_dir + "/weights_l" + std::to_string(o.layers);
  const std::string onnx_path = o.work_dir + "/bert_base_l" + std::to_string(o.layers) + ".onnx";
  bool weights_written = false, onnx_written = false;

  for (int64_t seq : o.seqs) {
    const std::string what = "seq " + std::to_string(seq) + ", " + std::to_string(o.layers) + " layers";
    std::fprintf(stderr, "bert %s: loading builtin:bert-base...\n", what.c_str());
    ModelOptions mo;
    mo.layers = o.layers;
    mo.seq = seq;
    ReferenceExecutor folder;
    Graph g = load_model("builtin:bert-base", mo, folder).graph;
    TensorMap in = make_default_inputs(g, 0);
    const double flops = matmul_flops(g);

    std::vector<Row> memory;  // after the case's timed rows
    if (with_builtin) {
      std::fprintf(stderr, "bert %s: peak RSS of ours in processes of their own...\n", what.c_str());
      const bool check = seq == 128 && o.layers == 12;
      memory.push_back(memory_row({GAF_CLI_PATH, "run", "builtin:bert-base", "--seq", std::to_string(seq), "--layers",
                                   std::to_string(o.layers), "-q"},
                                  "ours fused, JIT (gaf run): peak RSS", "builtin:bert-base, " + what, check));
#ifdef GAF_BERT_INFER_PATH
      // The AOT app is built for one size (GAF_BERT_SEQ / GAF_BERT_LAYERS).
      if (seq == GAF_BERT_INFER_SEQ && o.layers == GAF_BERT_INFER_LAYERS)
        memory.push_back(memory_row({GAF_BERT_INFER_PATH, "--repeat", "1"}, "ours fused, AOT (bert_infer): peak RSS",
                                    "builtin:bert-base, " + what, check));
#endif
    }
    std::fprintf(stderr, "bert %s: planning and compiling ours fused...\n", what.c_str());
    Ours fused(g, true);
    Tensor ref = fused.first_run(in);  // warm-up and the reference output
    std::vector<Variant> vs;
    vs.push_back({"bert", "ours fused", "", [&] { return time_ms([&] { fused.run(in); }); }, ref});
    vs.back().note = std::to_string(fused.groups()) + " groups";

    std::unique_ptr<Ours> unfused, unpacked, onnx_fused, onnx_unfused;
#if GAF_HAVE_DNNL
    std::unique_ptr<OnednnBert> dnnl;
#endif
    std::unique_ptr<TorchBert> torch;
    std::vector<Row> skips;  // peers not available: after the case's measured rows
    if (o.want("onnx") && !torch_missing.empty())
      skips.push_back(skipped("onnx", "torch.onnx.export, " + what, "ours fused, ours unfused",
                              "PyTorch: not found, skipped (it exports the ONNX)"));
    if (with_builtin && o.bert_unpacked) {
      unpacked = std::make_unique<Ours>(g, true, false);
      vs.push_back({"bert", "ours fused, weights unpacked", "", [&] { return time_ms([&] { unpacked->run(in); }); },
                    unpacked->first_run(in)});
    }
    if (with_builtin) {
      std::fprintf(stderr, "bert %s: compiling ours unfused...\n", what.c_str());
      unfused = std::make_unique<Ours>(g, false);
      vs.push_back({"bert", "ours unfused", std::to_string(unfused->groups()) + " groups",
                    [&] { return time_ms([&] { unfused->run(in); }); }, unfused->first_run(in)});
#if GAF_HAVE_DNNL
      std::fprintf(stderr, "bert %s: building the oneDNN encoder...\n", what.c_str());
      dnnl = std::make_unique<OnednnBert>(g, o.layers, 1, seq);
      const Tensor &hs = in.at("hidden_states"), &mask = in.at("attention_mask");
      vs.push_back({"bert", "oneDNN hand-fused", "oneDNN " + onednn_version(),
                    [&, hs, mask] { return time_ms([&] { dnnl->run(hs, mask); }); }, dnnl->run(hs, mask)});
#else
      skips.push_back(skipped("bert", "builtin:bert-base, " + what, "oneDNN hand-fused", "oneDNN: not found, skipped"));
#endif
    }
    if (torch_missing.empty() && (with_builtin || with_onnx) && !weights_written) {
      std::fprintf(stderr, "bert: writing weights for PyTorch to %s...\n", weights_dir.c_str());
      write_weights(g, weights_dir);
      weights_written = true;
    }
    if (with_builtin && torch_missing.empty()) {
      const std::string inputs_dir = o.work_dir + "/inputs_seq" + std::to_string(seq);
      make_dir(inputs_dir);
      write_npy(inputs_dir + "/hidden_states.npy", in.at("hidden_states"));
      write_npy(inputs_dir + "/attention_mask.npy", in.at("attention_mask"));
      std::fprintf(stderr, "bert %s: starting PyTorch eager...\n", what.c_str());
      torch = std::make_unique<TorchBert>(o.python, script, weights_dir, inputs_dir, o.layers, seq, o.threads);
      vs.push_back({"bert", "PyTorch eager",
                    "torch " + torch->version() + ", " + std::to_string(o.threads) + " threads",
                    [&] { return torch->run_ms(); }, torch->output(inputs_dir + "/torch_out.npy"),
                    std::min(o.repeat, o.torch_rounds)});
      vs.back().note += ", " + std::to_string(vs.back().max_rounds) + " rounds";
    } else if (with_builtin) {
      skips.push_back(skipped("bert", "builtin:bert-base, " + what, "PyTorch eager", "PyTorch: not found, skipped"));
    }
    if (with_onnx) {
      if (!onnx_written) {
        std::fprintf(stderr, "onnx: exporting the PyTorch module to %s...\n", onnx_path.c_str());
        std::string cmd = "'" + o.python + "' '" + script + "' --layers " + std::to_string(o.layers) +
                          " --seq 8 --weights '" + weights_dir + "' --export-onnx '" + onnx_path + "' >/dev/null";
        if (std::system(cmd.c_str()) != 0) throw GafError("torch_bert.py --export-onnx failed: " + cmd);
        onnx_written = true;
      }
      std::fprintf(stderr, "onnx %s: importing and compiling fused and unfused...\n", what.c_str());
      ModelOptions oo;
      oo.dims = {{"batch", 1}, {"seq", seq}};
      ReferenceExecutor folder2;
      Graph og = load_model(onnx_path, oo, folder2).graph;
      onnx_fused = std::make_unique<Ours>(og, true);
      onnx_unfused = std::make_unique<Ours>(og, false);
      vs.push_back({"onnx", "ours fused", std::to_string(onnx_fused->groups()) + " groups",
                    [&] { return time_ms([&] { onnx_fused->run(in); }); }, onnx_fused->first_run(in)});
      vs.push_back({"onnx", "ours unfused", std::to_string(onnx_unfused->groups()) + " groups",
                    [&] { return time_ms([&] { onnx_unfused->run(in); }); }, onnx_unfused->first_run(in)});
    }

    std::fprintf(stderr, "bert %s: timing %zu variants interleaved, %d rounds...\n", what.c_str(), vs.size(), o.repeat);
    std::vector<std::function<double()>> timers;
    std::vector<int> max_rounds;
    std::vector<std::string> names;
    for (const Variant& v : vs)
      timers.push_back(v.time), max_rounds.push_back(v.max_rounds), names.push_back(v.section + ":" + v.variant);
    std::vector<Timing> med = interleaved_medians(timers, o.repeat, max_rounds, names, o.pause_ms);

    double fused_ms = med[0].median_ms, onnx_fused_ms = kNone;
    for (size_t i = 0; i < vs.size(); ++i)
      if (vs[i].section == "onnx" && vs[i].variant == "ours fused") onnx_fused_ms = med[i].median_ms;
    for (size_t i = 0; i < vs.size(); ++i) {
      const Variant& v = vs[i];
      if (v.section == "bert" && !with_builtin) continue;
      Row r{v.section, (v.section == "onnx" ? "torch.onnx.export, " : "builtin:bert-base, ") + what, v.variant};
      r.ms = med[i].median_ms;
      r.min_ms = med[i].min_ms;
      set_rate(r, flops, o.peak_gflops);
      r.vs_fused = r.ms / (v.section == "onnx" ? onnx_fused_ms : fused_ms);
      if (i > 0) r.max_rel_diff = max_rel_diff({{"y", v.out}}, {{"y", ref}});
      r.note = v.note;
      const bool is_128 = seq == 128 && o.layers == 12;
      if (v.section == "bert" && v.variant == "ours fused") {
        r.note += fixed(", plan+JIT %.1f s", fused.compile_s);
        if (is_128) r.target = std::string("plan+JIT <= 30 s: ") + (fused.compile_s <= 30 ? "yes" : "NO");
      }
      if (v.section == "bert" && v.variant == "ours unfused" && is_128)
        r.target = std::string("fused >= 1.15x faster: ") + (r.vs_fused >= 1.15 ? "yes" : "NO") +
                   fixed(" (%.2fx)", r.vs_fused);
      if (v.section == "bert" && v.variant == "oneDNN hand-fused" && is_128)
        r.target = std::string("fused <= 1.0x oneDNN time: ") + (r.vs_fused >= 1.0 ? "yes" : "NO") +
                   fixed(" (%.2fx)", 1.0 / r.vs_fused);
      if (v.section == "onnx") {
        r.note += v.variant == "ours fused" ? fixed(", plan+JIT %.1f s", onnx_fused->compile_s) : "";
        if (v.variant == "ours fused") r.note += fixed(", ONNX fused / builtin fused time %.2fx", r.ms / fused_ms);
      }
      rows.push_back(r);
    }
    rows.insert(rows.end(), memory.begin(), memory.end());
    rows.insert(rows.end(), skips.begin(), skips.end());
  }
}

}  // namespace gaf::bench
