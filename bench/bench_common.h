// What gaf_bench's sections share: options, interleaved timing with medians, graph helpers.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "fusion/ir/builder.h"

namespace gaf::bench {

struct BenchOptions {
  int repeat = 7;  // timed rounds per case (MatMul shapes: 10x as many)
  std::vector<int64_t> seqs{128, 512};
  int layers = 12;
  std::set<std::string> only;               // sections to run; empty = all
  std::string work_dir = "/tmp/gaf_bench";  // weights/inputs for PyTorch, the exported ONNX
  std::string python = "/usr/bin/python3";
  int threads = 1;         // cores: PyTorch's thread count
  int torch_rounds = 2;    // PyTorch eager is timed this many times, after the rounds
  int pause_ms = 0;        // BERT: idle before every run (see interleaved_medians)
  double peak_gflops = 0;  // measured, for "% of peak"
  // "key=value,...": the MatMul section also times ours with these MatMulParams changed
  // (vectors, rows, k_unroll, a_block_bytes, k_block), interleaved: an A/B of one parameter.
  std::string matmul_alt;
  bool bert_unpacked = false;                          // the BERT section also times ours fused with weights not packed
  std::vector<int64_t> dynamic_seqs{1, 32, 128, 512};  // section "dynamic": the lengths measured
  bool want(const std::string& section) const { return only.empty() || only.count(section) != 0; }
};

double median(std::vector<double> v);

// Wall milliseconds of one call.
double time_ms(const std::function<void()>& f);

// `rounds` rounds; each runs every variant once (the first variant rotating, so a change of load
// hits all alike). A variant returns its own time in ms. Returns each variant's median.
// `max_rounds[i]` > 0 marks a slow peer: timed max_rounds[i] times after the interleaved rounds.
// With `names`, an untimed round runs first (variants with a round limit excepted), and each
// round's times go to stderr in run order (to see what a slow round followed). `pause_ms`: idle
// time before every run (see bench_common.cpp).
struct Timing {
  double median_ms, min_ms;
};
std::vector<Timing> interleaved_medians(const std::vector<std::function<double()>>& variants, int rounds,
                                        const std::vector<int>& max_rounds = {},
                                        const std::vector<std::string>& names = {}, int pause_ms = 0);

// Shape inference and folding for a builder-made graph (all dims static).
Graph prepared(GraphBuilder& b);

// 2*M*N*K summed over the graph's MatMuls (batched ones included).
double matmul_flops(const Graph& g);

// GFLOP/s and % of the measured peak for `flops` done in `ms`.
void set_rate(Row& r, double flops, double peak_gflops);

void run_matmul_section(const BenchOptions& o, std::vector<Row>& rows);
// Section "bf16": MatMul + epilogue bf16 against oneDNN bf16, BERT-base seq 128 fp32 against bf16.
void run_bf16_section(const BenchOptions& o, std::vector<Row>& rows);
void run_bert_section(const BenchOptions& o, std::vector<Row>& rows);
void run_dynamic_section(const BenchOptions& o, std::vector<Row>& rows);

}  // namespace gaf::bench
