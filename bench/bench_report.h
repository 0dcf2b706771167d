// gaf_bench's result rows and their three renderings: the markdown table (stdout), a JSON file
// and an SVG bar chart of GFLOP/s (plain C++, no dependency).
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace gaf::bench {

constexpr double kNone = NAN;  // a cell that does not apply

struct Row {
  std::string section;    // "peak", "matmul", "bert", "onnx"
  std::string what;       // the case: a shape, "builtin seq 128", ...
  std::string variant;    // "ours fused", "ours unfused", "oneDNN", "PyTorch eager", ...
  double ms = kNone;      // median wall time of one run
  double min_ms = kNone;  // fastest run (the spread to the median shows the noise)
  double gflops = kNone;
  double pct_peak = kNone;
  double vs_fused = kNone;      // this row's ms / ours fused ms of the same case (> 1: ours faster)
  double max_rel_diff = kNone;  // against ours fused of the same case (ours unfused: against fused)
  std::string target;           // "≥ 0.9x oneDNN: yes (0.95x)", ...
  std::string note;
};

struct Report {
  std::string command, date, cpu;
  std::string load_start, load_end;  // 1-minute load average from /proc/loadavg
  int cores = 0;
  int repeat = 0;
  std::vector<Row> rows;
};

// One markdown table, one row per Row.
std::string markdown_table(const Report& r);
// Throw std::runtime_error naming the file when it cannot be written.
void write_json(const std::string& path, const Report& r);
void write_svg(const std::string& path, const Report& r);

}  // namespace gaf::bench
