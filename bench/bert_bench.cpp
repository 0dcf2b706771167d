// gaf_bench: one command, one table. Measures this machine's FMA peak, then each BERT-base
// MatMul shape (ours fused vs oneDNN with the same post-ops) and BERT-base forwards (ours fused
// and unfused, oneDNN hand-fused, PyTorch eager; ours on a PyTorch-exported ONNX too), all in
// the same run, variants interleaved, medians. See bench/README.md.
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "bench/bench_common.h"
#include "bench/peak_fma.h"

namespace gaf::bench {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The 1-minute load average (other processes on the CPUs skew every figure).
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? "?" : one;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return b;
}

int run(BenchOptions o, Report& rep, const std::string& json, const std::string& svg) {
  rep.load_start = load_average();
  std::fprintf(stderr, "peak: measuring fp32 FMA throughput...\n");
  PeakFma peak = measure_peak_fma(5, 0.2);
  o.peak_gflops = peak.gflops;
  o.threads = peak.threads;
#if !GAF_HAVE_DNNL
  std::fprintf(stderr, "oneDNN: not found, skipped\n");
#endif
  if (o.want("matmul")) run_matmul_section(o, rep.rows);
  if (o.want("bf16")) run_bf16_section(o, rep.rows);
  if (o.want("bert") || o.want("onnx")) run_bert_section(o, rep.rows);
  if (o.want("dynamic")) run_dynamic_section(o, rep.rows);

  // Measured again at the end (load changes during a run): the best of both is the peak, and
  // "% of peak" of every row is recomputed from it.
  std::fprintf(stderr, "peak: measuring fp32 FMA throughput again...\n");
  const double start_gflops = peak.gflops, end_gflops = measure_peak_fma(5, 0.2).gflops;
  const double best = std::max(start_gflops, end_gflops);
  for (Row& r : rep.rows)
    if (!std::isnan(r.gflops)) r.pct_peak = 100.0 * r.gflops / best;
  Row p{"peak", "fp32 FMA, " + std::to_string(peak.threads) + " threads", peak.isa};
  p.gflops = best;
  p.pct_peak = 100.0;
  char note[128];
  std::snprintf(note, sizeof note, "best of 5 x 0.2 s at start (%.1f) and at end (%.1f)", start_gflops, end_gflops);
  p.note = note;
  rep.rows.insert(rep.rows.begin(), p);
  rep.load_end = load_average();
  std::printf(
      "gaf_bench, %s, %s (%d cores), load average %s at start, %s at end; medians of "
      "interleaved runs (%d rounds; MatMul shapes %d)\n\n",
      rep.date.c_str(), rep.cpu.c_str(), rep.cores, rep.load_start.c_str(), rep.load_end.c_str(), o.repeat,
      std::max(10, 10 * o.repeat));
  if (std::atof(rep.load_start.c_str()) > 0.5)
    std::printf(
        "warning: load average %s before the bench started: other processes were using the "
        "CPUs; the OpenMP peers (oneDNN, PyTorch) suffer most (compare min and median ms)\n\n",
        rep.load_start.c_str());
  std::printf("%s", markdown_table(rep).c_str());
  if (!json.empty()) write_json(json, rep);
  if (!svg.empty()) write_svg(svg, rep);
  return 0;
}

}  // namespace
}  // namespace gaf::bench

int main(int argc, char** argv) {
  // The peers' OpenMP threads spin after each primitive by default; interleaved with our Halide
  // thread pool they would then take the cores from our kernels (measured: our 128-row MatMuls
  // at half speed). Passive waiting is the fair setting for runtimes taking turns. libgomp reads
  // it when it loads, before main, hence the re-exec.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
  }
  using namespace gaf::bench;
  CLI::App app("gaf_bench: ours vs oneDNN vs PyTorch on BERT-base, with this machine's FMA peak");
  BenchOptions o;
  std::vector<std::string> only;
  std::string json, svg;
  app.add_option("--repeat", o.repeat, "timed rounds per case (MatMul shapes: 10x, at least 10)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--only", only, "sections to run (repeatable): peak, matmul, bf16, bert, onnx, dynamic")
      ->check(CLI::IsMember({"peak", "matmul", "bf16", "bert", "onnx", "dynamic"}));
  app.add_option("--seq", o.seqs, "BERT sequence lengths")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--layers", o.layers, "BERT layers (targets are checked at 12 only)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json, "also write the results as JSON to FILE");
  app.add_option("--svg", svg, "also write a bar chart of GFLOP/s to FILE (SVG)");
  app.add_option("--work-dir", o.work_dir, "scratch folder: weights and inputs for PyTorch, the exported ONNX")
      ->capture_default_str();
  app.add_option("--pause-ms", o.pause_ms,
                 "BERT: idle milliseconds before every run (a cold start: slower on this VM, oneDNN most)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--torch-rounds", o.torch_rounds,
                 "PyTorch eager is timed N times (at most --repeat), after the interleaved rounds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--python", o.python, "the Python that has torch")->capture_default_str();
  app.add_flag("--bert-unpacked", o.bert_unpacked,
               "also time ours fused on BERT with MatMul weights not packed at load (an A/B in one run)");
  app.add_option("--matmul-alt", o.matmul_alt,
                 "also time ours with these MatMul parameters changed, e.g. k_block=0 (an A/B in one run)");
  CLI11_PARSE(app, argc, argv);
  o.only.insert(only.begin(), only.end());

  Report rep;
  for (int i = 0; i < argc; ++i) rep.command += (i ? " " : "") + std::string(argv[i]);
  rep.date = utc_now();
  rep.cpu = cpu_model();
  rep.cores = static_cast<int>(std::thread::hardware_concurrency());
  rep.repeat = o.repeat;
  try {
    return run(o, rep, json, svg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaf_bench: error: %s\n", e.what());
    return 1;
  }
}
