#include "bench/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace gaf::bench {
namespace {

std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << text)) throw std::runtime_error("cannot write " + path);
}

}  // namespace

std::string markdown_table(const Report& r) {
  std::ostringstream o;
  o << "| section | case | variant | median ms | min ms | GFLOP/s | % of peak | ms / ours fused ms | "
       "max rel diff | target | note |\n"
    << "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  for (const Row& w : r.rows)
    o << "| " << w.section << " | " << w.what << " | " << w.variant << " | " << fmt("%.2f", w.ms) << " | "
      << fmt("%.2f", w.min_ms) << " | " << fmt("%.1f", w.gflops) << " | " << fmt("%.1f%%", w.pct_peak) << " | "
      << fmt("%.2fx", w.vs_fused) << " | " << fmt("%.1e", w.max_rel_diff) << " | " << w.target << " | " << w.note
      << " |\n";
  return o.str();
}

void write_json(const std::string& path, const Report& r) {
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json j{{"format", "graph-autofusion/bench/1"},
                   {"command", r.command},
                   {"date", r.date},
                   {"cpu", r.cpu},
                   {"cores", r.cores},
                   {"repeat", r.repeat},
                   {"load_average_start", r.load_start},
                   {"load_average_end", r.load_end}};
  j["rows"] = nlohmann::json::array();
  for (const Row& w : r.rows)
    j["rows"].push_back({{"section", w.section},
                         {"case", w.what},
                         {"variant", w.variant},
                         {"median_ms", num(w.ms)},
                         {"min_ms", num(w.min_ms)},
                         {"gflops", num(w.gflops)},
                         {"pct_peak", num(w.pct_peak)},
                         {"ms_over_ours_fused", num(w.vs_fused)},
                         {"max_rel_diff", num(w.max_rel_diff)},
                         {"target", w.target},
                         {"note", w.note}});
  write_file(path, j.dump(2) + "\n");
}

// Horizontal bars, one per row with a GFLOP/s figure, grouped by case; the peak row is drawn
// as a vertical line when it fits the scale, else printed in the title.
void write_svg(const std::string& path, const Report& r) {
  std::vector<const Row*> bars;
  double peak = kNone, top = 0;
  for (const Row& w : r.rows) {
    if (std::isnan(w.gflops)) continue;
    if (w.section == "peak") {
      peak = w.gflops;
      continue;
    }
    bars.push_back(&w);
    top = std::max(top, w.gflops);
  }
  const bool peak_line = !std::isnan(peak) && peak <= 1.5 * top;
  if (peak_line) top = std::max(top, peak);
  if (top <= 0) top = 1;
  const int label_w = 380, plot_w = 520, bar_h = 16, gap = 4, head = 50;
  const int height = head + static_cast<int>(bars.size()) * (bar_h + gap) + 30;
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << label_w + plot_w + 90 << "' height='" << height
    << "' font-family='sans-serif' font-size='11'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='18' font-size='14'>gaf_bench: GFLOP/s (higher is better), " << xml_escape(r.cpu) << ", "
    << r.cores << " cores" << (std::isnan(peak) ? "" : ", measured FMA peak " + fmt("%.0f", peak) + " GFLOP/s")
    << "</text>\n<text x='10' y='34' fill='#555'>" << xml_escape(r.date) << "  " << xml_escape(r.command)
    << "</text>\n";
  auto color = [](const std::string& v) {
    if (v.rfind("ours fused", 0) == 0) return "#1f77b4";
    if (v.rfind("ours unfused", 0) == 0) return "#aec7e8";
    if (v.rfind("oneDNN", 0) == 0) return "#ff7f0e";
    return "#2ca02c";
  };
  int y = head;
  for (const Row* w : bars) {
    int len = static_cast<int>(plot_w * w->gflops / top);
    o << "<text x='" << label_w - 6 << "' y='" << y + bar_h - 4 << "' text-anchor='end'>"
      << xml_escape(w->section + " " + w->what + " — " + w->variant) << "</text>\n"
      << "<rect x='" << label_w << "' y='" << y << "' width='" << std::max(len, 1) << "' height='" << bar_h
      << "' fill='" << color(w->variant) << "'/>\n"
      << "<text x='" << label_w + len + 4 << "' y='" << y + bar_h - 4 << "'>" << fmt("%.1f", w->gflops) << "</text>\n";
    y += bar_h + gap;
  }
  if (peak_line) {
    int x = label_w + static_cast<int>(plot_w * peak / top);
    o << "<line x1='" << x << "' y1='" << head - 6 << "' x2='" << x << "' y2='" << y
      << "' stroke='red' stroke-dasharray='4,3'/>\n<text x='" << x + 3 << "' y='" << y + 14
      << "' fill='red'>FMA peak</text>\n";
  }
  o << "</svg>\n";
  write_file(path, o.str());
}

}  // namespace gaf::bench
