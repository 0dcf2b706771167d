#include "fusion/report/html_report.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "fusion/planner/planner.h"
#include "fusion/report/repeats.h"
#include "fusion/report/report.h"

namespace gaf {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  return o;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string mb(int64_t bytes) { return fmt("%.2f MB", bytes / 1e6); }
std::string ms(double v) { return fmt("%.3f ms", v); }

const char* kStyle = R"(
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top;font-size:90%}
th{background:#f0f0f0} td.num,td.kind{text-align:right;white-space:nowrap} td.kind{text-align:left}
pre.log{background:#f8f8f8;padding:.5em;overflow-x:auto;font-size:85%}
.swatch{display:inline-block;width:1em;height:1em;border:1px solid #999;vertical-align:middle;margin-right:.3em}
.picture{overflow:auto;border:1px solid #ddd;max-height:90vh}
.code{font-family:monospace;color:#b00} .node{font-family:monospace;font-size:85%}
tr:target{outline:2px solid #d00}
)";

class Writer {
 public:
  Writer(const Graph& g, const FusionPlan& plan, const HtmlReportInputs& in)
      : g_(g), plan_(plan), in_(in), rb_(find_repeated_block(plan)) {}

  std::string page() {
    os_ << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>graph-autofusion report: "
        << esc(in_.model) << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n";
    summary();
    picture();
    totals();
    groups();
    refused();
    os_ << "</body></html>\n";
    return os_.str();
  }

 private:
  void summary() {
    int64_t saved = 0;
    int fusions = 0;
    for (const FusionGroup& grp : plan_.groups) {
      saved += grp.bytes_saved();
      fusions += grp.nodes.size() >= 2;
    }
    os_ << "<h1>Fusion report: " << esc(in_.model) << "</h1>\n<p id=\"summary\">" << g_.nodes().size() << " ops in "
        << plan_.groups.size() << " kernels; " << fusions << " fusions; predicted " << mb(saved)
        << " less memory traffic; " << plan_.refused.size() << " refused merges.";
    if (in_.profile)
      os_ << " Measured (median of " << in_.profile->runs << " runs, same process): forward "
          << ms(in_.profile->fused_forward_ms) << " fused vs " << ms(in_.profile->unfused_forward_ms) << " unfused ("
          << fmt("%.2fx", in_.profile->unfused_forward_ms / in_.profile->fused_forward_ms) << ").";
    os_ << "</p>\n<pre class=\"log\">" << esc(fusion_log_lines(g_, plan_)) << "</pre>\n"
        << "<p>Why a node was or was not fused: <code>gaf explain MODEL --node NAME</code>. "
           "Numerical check per group: <code>gaf verify MODEL</code>.</p>\n";
  }

  void picture() {
    os_ << "<h2 id=\"picture\">Graph</h2>\n<p>";
    for (FusionKind k : {FusionKind::Elementwise, FusionKind::MatMulEpilogue, FusionKind::Normalization,
                         FusionKind::HorizontalMatMul, FusionKind::CommCompute, FusionKind::Custom})
      os_ << "<span class=\"swatch\" style=\"background:" << fusion_kind_colour(k) << "\"></span>"
          << fusion_kind_name(k) << " &nbsp; ";
    os_ << "<span style=\"color:red\">- - -&gt; refused merge (reason code)</span>. Boxes are ops (hover for the "
           "node name); a coloured cluster is one fused kernel (click it for its row below).";
    if (rb_.repeats())
      os_ << " The first of " << rb_.count << " identical layers is drawn in full; the other " << layers(rb_.count - 1)
          << " folded into one box.";
    os_ << "</p>\n";
    if (in_.svg.empty()) {
      os_ << "<p id=\"no-picture\"><b>No picture:</b> " << esc(in_.svg_note) << "</p>\n";
      return;
    }
    size_t at = in_.svg.find("<svg");
    os_ << "<div class=\"picture\">\n" << (at == std::string::npos ? in_.svg : in_.svg.substr(at)) << "</div>\n";
  }

  void totals() {
    const PlanProfile* p = in_.profile;
    os_ << "<h2 id=\"totals\">Fusions by kind</h2>\n<table id=\"totals-table\"><tr><th>kind</th><th>count</th>";
    if (p) os_ << "<th>time saved per fusion</th><th>total time saved</th>";
    os_ << "<th>bytes saved per fusion (predicted)</th><th>total bytes saved</th><th>launches saved</th></tr>\n";
    KindTotal all;
    for (const auto& [kind, t] : fusion_totals(plan_, p)) {
      os_ << "<tr><td>" << kind << "</td><td class=\"num\">" << t.count << "</td>";
      if (p)
        os_ << "<td class=\"num\">" << ms(t.ms_saved / t.count) << "</td><td class=\"num\">" << ms(t.ms_saved)
            << "</td>";
      os_ << "<td class=\"num\">" << mb(t.bytes_saved / t.count) << "</td><td class=\"num\">" << mb(t.bytes_saved)
          << "</td><td class=\"num\">" << t.launches_saved << "</td></tr>\n";
      all.count += t.count;
      all.bytes_saved += t.bytes_saved;
      all.launches_saved += t.launches_saved;
      all.ms_saved += t.ms_saved;
    }
    os_ << "<tr><th>total</th><th class=\"num\">" << all.count << "</th>";
    if (p) os_ << "<th></th><th class=\"num\">" << ms(all.ms_saved) << "</th>";
    os_ << "<th></th><th class=\"num\">" << mb(all.bytes_saved) << "</th><th class=\"num\">" << all.launches_saved
        << "</th></tr>\n</table>\n";
    if (p)
      os_ << "<p>Time saved = the group's member ops each run as its own kernel, minus the group run as one "
             "kernel (medians, same inputs, same run).</p>\n";
  }

  void groups() {
    os_ << "<h2 id=\"groups\">Groups</h2>\n";
    size_t n = plan_.groups.size();
    if (!rb_.repeats()) {
      group_table(0, n);
      return;
    }
    size_t a = rb_.first + rb_.period, b = rb_.first + rb_.period * rb_.count;
    group_table(0, a);
    os_ << "<details><summary>" << layers(rb_.count - 1) << " identical to the first, folded: g" << a << "..g" << b - 1
        << " (" << b - a << " groups; same kinds, rules and decisions as g" << rb_.first << "..g" << a - 1
        << ") &mdash; show</summary>\n";
    group_table(a, b);
    os_ << "</details>\n";
    if (b < n) group_table(b, n);
  }

  void group_table(size_t begin, size_t end) {
    const PlanProfile* p = in_.profile;
    os_ << "<table class=\"groups\"><tr><th>group</th><th>kind</th><th>rule</th><th>label</th><th>ops</th>"
           "<th>source nodes</th><th>Func decisions</th><th>bytes saved (predicted)</th>";
    if (p) os_ << "<th>fused</th><th>unfused</th><th>saved</th>";
    os_ << "</tr>\n";
    for (size_t i = begin; i < end; ++i) {
      const FusionGroup& grp = plan_.groups[i];
      os_ << "<tr id=\"g" << grp.id << "\"><td>g" << grp.id
          << "</td><td class=\"kind\"><span class=\"swatch\" style=\"background:" << fusion_kind_colour(grp.kind)
          << "\"></span>" << fusion_kind_name(grp.kind) << "</td><td>" << esc(grp.rule.empty() ? "-" : grp.rule_label())
          << "</td><td>" << esc(grp.kernel.label) << "</td><td class=\"num\">" << grp.nodes.size() << "</td><td>";
      std::string nodes;
      for (int nd : grp.nodes) {
        nodes += "<div class=\"node\">" + esc(g_.nodes()[nd].name) + " <i>" + esc(g_.nodes()[nd].op_type) + "</i>";
        auto src = plan_.source_nodes.find(g_.nodes()[nd].name);
        if (src != plan_.source_nodes.end())
          for (const std::string& o : src->second) nodes += "<br>&nbsp;&nbsp;replaces " + esc(o);
        nodes += "</div>";
      }
      foldable(grp.nodes.size(), "nodes", nodes);
      os_ << "</td><td>";
      std::string decisions;
      for (const FuncDecision& d : grp.decisions)
        decisions += "<div class=\"node\">" + esc(d.value) + ": <b>" + compute_decision_name(d.decision) + "</b>" +
                     (d.at.empty() ? "" : " at " + esc(d.at)) + " <span title=\"" + esc(d.reason) +
                     "\">&#9432;</span></div>";
      foldable(grp.decisions.size(), "decisions", decisions);
      os_ << "</td><td class=\"num\">" << mb(grp.bytes_saved()) << "</td>";
      if (p) {
        const GroupTiming& t = p->groups.at(grp.id);
        os_ << "<td class=\"num\">" << ms(t.fused_ms) << "</td><td class=\"num\">" << ms(t.unfused_ms)
            << "</td><td class=\"num\">" << ms(t.saved_ms()) << "</td>";
      }
      os_ << "</tr>\n";
    }
    os_ << "</table>\n";
  }

  static std::string layers(size_t n) { return n == 1 ? "1 layer is" : std::to_string(n) + " layers are"; }

  // Long lists start closed.
  void foldable(size_t count, const char* what, const std::string& html) {
    if (count <= 3)
      os_ << html;
    else
      os_ << "<details><summary>" << count << " " << what << "</summary>" << html << "</details>";
  }

  void refused() {
    os_ << "<h2 id=\"refused\">Refused merges</h2>\n";
    std::map<ReasonCode, int> by_code;
    for (const RefusedMerge& r : plan_.refused) ++by_code[r.code];
    os_ << "<table id=\"refused-codes\"><tr><th>code</th><th>meaning</th><th>count</th></tr>\n";
    for (const auto& [code, n] : by_code)
      os_ << "<tr><td class=\"code\">" << esc(reason_code_id(code)) << "</td><td>" << esc(reason_meaning(code))
          << "</td><td class=\"num\">" << n << "</td></tr>\n";
    os_ << "</table>\n<details" << (plan_.refused.size() <= 40 ? " open" : "") << "><summary>all "
        << plan_.refused.size()
        << " refused merges</summary>\n<table id=\"refused-table\"><tr><th>code</th>"
           "<th>rule</th><th>nodes</th><th>why</th></tr>\n";
    for (const RefusedMerge& r : plan_.refused) {
      os_ << "<tr><td class=\"code\">" << esc(reason_code_id(r.code)) << "</td><td>" << esc(r.rule) << "</td><td>";
      for (const std::string& nd : r.nodes) os_ << "<div class=\"node\">" << esc(nd) << "</div>";
      os_ << "</td><td>" << esc(r.message) << "</td></tr>\n";
    }
    os_ << "</table></details>\n";
  }

  const Graph& g_;
  const FusionPlan& plan_;
  const HtmlReportInputs& in_;
  RepeatedBlock rb_;
  std::ostringstream os_;
};

}  // namespace

std::string fusion_html_report(const Graph& g, const FusionPlan& plan, const HtmlReportInputs& in) {
  return Writer(g, plan, in).page();
}

}  // namespace gaf
