#include "apps/gaf/npu_report.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "fusion/report/report.h"

namespace gaf::cli {

namespace {

std::string mb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f MB", bytes / 1e6);
  return b;
}

std::string ms(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", us / 1e3);
  return b;
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

struct KindSaving {
  int count = 0;
  double saved_us = 0;
  double saved_bytes = 0;
};

// Per group label ("MatMul+GELU", "LayerNorm", ...), the fusions (groups of 2+ ops).
std::map<std::string, KindSaving> savings(const FusionPlan& plan, const NpuPlanModel& m) {
  std::map<std::string, KindSaving> by;
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2) continue;
    const NpuGroupModel& gm = m.groups.at(grp.id);
    KindSaving& k = by[grp.kernel.label];
    ++k.count;
    k.saved_us += gm.saved_us();
    k.saved_bytes += static_cast<double>(gm.unfused.gm_read_bytes + gm.unfused.gm_write_bytes - gm.fused.gm_read_bytes -
                                         gm.fused.gm_write_bytes);
  }
  return by;
}

nlohmann::json counts_json(const NpuCounts& c, const NpuModeledTime& t) {
  nlohmann::json peak;
  for (int b = 0; b < kNpuBuffers; ++b) peak[npu_buffer_name(b)] = c.peak_bytes[b];
  return {{"launches", c.launches},
          {"gm_read_bytes", c.gm_read_bytes},
          {"gm_write_bytes", c.gm_write_bytes},
          {"l1_to_l0_bytes", c.l1_to_l0_bytes},
          {"cube_macs", c.cube_macs},
          {"vector_ops", c.vector_ops},
          {"tiles", c.tiles},
          {"peak_buffer_bytes", peak},
          {"modeled_us",
           {{"dma_in", t.dma_in_us},
            {"dma_out", t.dma_out_us},
            {"cube", t.cube_us},
            {"vector", t.vector_us},
            {"launch", t.launch_us},
            {"links", t.link_us},
            {"total", t.total_us}}},
          {"link_bytes", c.link_bytes},
          {"link_steps", c.link_steps}};
}

}  // namespace

std::string npu_report_text(const FusionPlan& plan, const NpuPlanModel& m) {
  const NpuTarget& t = m.target;
  std::ostringstream os;
  char line[256];
  os << "NPU tile model: " << t.name << " (" << t.file << "): " << t.ai_cores << " AI cores at " << t.clock_ghz
     << " GHz, GM " << t.gm_bandwidth_gbps << " GB/s, L1 " << t.l1_bytes / 1024 << " KB, UB " << t.ub_bytes / 1024
     << " KB, L0A/L0B " << t.l0a_bytes / 1024 << "/" << t.l0b_bytes / 1024 << " KB, L0C " << t.l0c_bytes / 1024
     << " KB\n";
  os << "counted by the simulator from the staging copies of one forward pass (fp32); time is modeled\n\n";
  const bool links = m.ranks > 1;  // --tp: the collectives' link time is a column of its own
  std::snprintf(line, sizeof line, "  %-9s %8s %12s %12s %12s %11s %11s %11s %11s%s %12s\n", "", "kernels", "GM read",
                "GM written", "GM total", "DMA", "cube", "vector", "launch", links ? "       links" : "", "modeled");
  os << line;
  auto row = [&](const char* name, const NpuCounts& c, const NpuModeledTime& p) {
    char link_col[24] = "";
    if (links) std::snprintf(link_col, sizeof link_col, " %11s", ms(p.link_us).c_str());
    std::snprintf(line, sizeof line, "  %-9s %8lld %12s %12s %12s %11s %11s %11s %11s%s %12s\n", name,
                  static_cast<long long>(c.launches), mb(c.gm_read_bytes).c_str(), mb(c.gm_write_bytes).c_str(),
                  mb(c.gm_read_bytes + c.gm_write_bytes).c_str(), ms(p.dma_in_us + p.dma_out_us).c_str(),
                  ms(p.cube_us).c_str(), ms(p.vector_us).c_str(), ms(p.launch_us).c_str(), link_col,
                  ms(p.total_us).c_str());
    os << line;
  };
  row("unfused", m.unfused, m.unfused_pipes);
  row("fused", m.fused, m.fused_pipes);
  const double gm_f = static_cast<double>(m.fused.gm_read_bytes + m.fused.gm_write_bytes);
  const double gm_u = static_cast<double>(m.unfused.gm_read_bytes + m.unfused.gm_write_bytes);
  std::snprintf(line, sizeof line,
                "fusion saves %lld launches, %s of GM traffic (%.1f%%) and %s of modeled time (%.1f%%: %.2fx)\n",
                static_cast<long long>(m.unfused.launches - m.fused.launches), mb(gm_u - gm_f).c_str(),
                pct(gm_u - gm_f, gm_u), ms(m.unfused_us - m.fused_us).c_str(),
                pct(m.unfused_us - m.fused_us, m.unfused_us), m.fused_us > 0 ? m.unfused_us / m.fused_us : 0.0);
  os << line;
  if (links)
    std::snprintf(line, sizeof line,
                  "rank 0 of %d (--tp): collectives modeled as rings over %g GB/s links, %g us per step; outputs "
                  "not compared (the other ranks' data is not there)\n\n",
                  m.ranks, t.link_bandwidth_gbps, t.link_latency_us);
  else
    std::snprintf(line, sizeof line, "fused vs unfused outputs on the NPU model: max |diff| %.3g\n\n", m.max_abs_diff);
  os << line;

  std::snprintf(line, sizeof line, "  %-24s %6s %18s %14s %14s\n", "fusion kind", "count", "saved per fusion",
                "total saved", "GM saved");
  os << line;
  KindSaving all;
  for (const auto& [label, k] : savings(plan, m)) {
    std::snprintf(line, sizeof line, "  %-24s %6d %18s %14s %14s\n", label.c_str(), k.count,
                  ms(k.saved_us / k.count).c_str(), ms(k.saved_us).c_str(), mb(k.saved_bytes).c_str());
    os << line;
    all.count += k.count;
    all.saved_us += k.saved_us;
    all.saved_bytes += k.saved_bytes;
  }
  std::snprintf(line, sizeof line, "  %-24s %6d %18s %14s %14s\n", "total", all.count, "", ms(all.saved_us).c_str(),
                mb(all.saved_bytes).c_str());
  os << line;
  std::snprintf(line, sizeof line, "\nNPU forward pass: %s fused vs %s unfused (modeled)\n", ms(m.fused_us).c_str(),
                ms(m.unfused_us).c_str());
  os << line;
  return os.str();
}

nlohmann::json npu_report_json(const FusionPlan& plan, const NpuPlanModel& m) {
  nlohmann::json groups = nlohmann::json::array();
  for (const FusionGroup& grp : plan.groups) {
    const NpuGroupModel& gm = m.groups.at(grp.id);
    groups.push_back({{"id", grp.id},
                      {"label", grp.kernel.label},
                      {"ops", grp.nodes.size()},
                      {"tiles", gm.tiles},
                      {"fused", counts_json(gm.fused, npu_modeled_time(gm.fused, m.target))},
                      {"unfused_us", gm.unfused_us},
                      {"saved_us", gm.saved_us()}});
  }
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [label, k] : savings(plan, m))
    kinds[label] = {{"count", k.count}, {"saved_us", k.saved_us}, {"gm_bytes_saved", k.saved_bytes}};
  return {{"target", m.target.name},
          {"target_file", m.target.file},
          {"fused", counts_json(m.fused, m.fused_pipes)},
          {"unfused", counts_json(m.unfused, m.unfused_pipes)},
          {"max_abs_diff_fused_vs_unfused", m.ranks > 1 ? nlohmann::json() : nlohmann::json(m.max_abs_diff)},
          {"ranks", m.ranks},
          {"by_kind", kinds},
          {"groups", groups}};
}

}  // namespace gaf::cli
