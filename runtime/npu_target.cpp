#include "runtime/npu_target.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/file_io.h"
#include "runtime/json_text.h"
#include "runtime/tensor.h"

namespace gaf {

extern const char* const kDefaultNpuTargetJson;  // generated from schedules/targets (CMake)

namespace {

// 1, 4096, 0.001, 1e+06: as a reader writes them.
std::string plain(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// A field is {"value": V, "source": "..."}; a bare number is accepted too. Every field has a
// range a real machine lies in: values outside it (1e30 cores) would overflow the counts and
// times derived from them.
double number(const nlohmann::json& j, const std::string& key, const std::string& origin, double min_value,
              double max_value) {
  if (!j.contains(key)) throw GafError(origin + ": field '" + key + "' is missing");
  const nlohmann::json& f = j.at(key);
  const nlohmann::json& v = f.is_object() ? (f.contains("value") ? f.at("value") : nlohmann::json()) : f;
  if (!v.is_number())
    throw GafError(origin + ": field '" + key + "' must be a number (or {\"value\": number, \"source\": text})");
  double d = v.get<double>();
  if (!(d >= min_value && d <= max_value))
    throw GafError(origin + ": field '" + key + "' is " + v.dump() + ", must be in [" + plain(min_value) + ", " +
                   plain(max_value) + "]");
  return d;
}

// A whole number in [min_value, max_value] (cores, cube dims, bytes).
int64_t whole(const nlohmann::json& j, const std::string& key, const std::string& origin, int64_t min_value,
              int64_t max_value) {
  double d = number(j, key, origin, static_cast<double>(min_value), static_cast<double>(max_value));
  if (d != static_cast<double>(static_cast<int64_t>(d)))
    throw GafError(origin + ": field '" + key + "' must be a whole number");
  return static_cast<int64_t>(d);
}

constexpr int64_t kMaxBufferBytes = int64_t{1} << 34;  // 16 GiB: far above any on-chip buffer
constexpr int64_t kMaxAlignBytes = 65536;

}  // namespace

NpuTarget parse_npu_target(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_json_text(text, origin);
  if (!j.is_object()) throw GafError(origin + ": the target must be a JSON object");
  if (j.contains("schema") && j.at("schema") != "graph-autofusion/npu-target/1")
    throw GafError(origin + ": field 'schema' is " + j.at("schema").dump() +
                   ", expected \"graph-autofusion/npu-target/1\"");
  NpuTarget t;
  t.file = origin;
  if (j.contains("name") && !j.at("name").is_string())
    throw GafError(origin + ": field 'name' must be a string, got " + j.at("name").dump());
  t.name = j.value("name", std::string("unnamed"));
  t.ai_cores = static_cast<int>(whole(j, "ai_cores", origin, 1, 4096));
  t.clock_ghz = number(j, "clock_ghz", origin, 1e-3, 100);
  t.gm_bandwidth_gbps = number(j, "gm_bandwidth_gbps", origin, 1e-3, 1e6);
  t.l1_bytes = whole(j, "l1_bytes", origin, 1, kMaxBufferBytes);
  t.ub_bytes = whole(j, "ub_bytes", origin, 1, kMaxBufferBytes);
  t.l0a_bytes = whole(j, "l0a_bytes", origin, 1, kMaxBufferBytes);
  t.l0b_bytes = whole(j, "l0b_bytes", origin, 1, kMaxBufferBytes);
  t.l0c_bytes = whole(j, "l0c_bytes", origin, 1, kMaxBufferBytes);
  t.cube_m = static_cast<int>(whole(j, "cube_m", origin, 1, 1024));
  t.cube_k = static_cast<int>(whole(j, "cube_k", origin, 1, 1024));
  t.cube_n = static_cast<int>(whole(j, "cube_n", origin, 1, 1024));
  t.cube_fp32_macs_per_cycle = number(j, "cube_fp32_macs_per_cycle", origin, 1e-3, 1e7);
  t.vector_bytes_per_cycle = number(j, "vector_bytes_per_cycle", origin, 1e-3, 1e6);
  t.ub_align_bytes = whole(j, "ub_align_bytes", origin, 1, kMaxAlignBytes);
  t.l0_align_bytes = whole(j, "l0_align_bytes", origin, 1, kMaxAlignBytes);
  t.gm_line_bytes = whole(j, "gm_line_bytes", origin, 1, kMaxAlignBytes);
  t.launch_overhead_us = number(j, "launch_overhead_us", origin, 0, 1e6);
  if (j.contains("link_bandwidth_gbps") || j.contains("link_latency_us")) {
    t.link_bandwidth_gbps = number(j, "link_bandwidth_gbps", origin, 1e-3, 1e6);
    t.link_latency_us = number(j, "link_latency_us", origin, 0, 1e6);
  }
  return t;
}

std::string npu_target_json(const NpuTarget& t) {
  nlohmann::json j = {{"schema", "graph-autofusion/npu-target/1"},
                      {"name", t.name},
                      {"ai_cores", t.ai_cores},
                      {"clock_ghz", t.clock_ghz},
                      {"gm_bandwidth_gbps", t.gm_bandwidth_gbps},
                      {"l1_bytes", t.l1_bytes},
                      {"ub_bytes", t.ub_bytes},
                      {"l0a_bytes", t.l0a_bytes},
                      {"l0b_bytes", t.l0b_bytes},
                      {"l0c_bytes", t.l0c_bytes},
                      {"cube_m", t.cube_m},
                      {"cube_k", t.cube_k},
                      {"cube_n", t.cube_n},
                      {"cube_fp32_macs_per_cycle", t.cube_fp32_macs_per_cycle},
                      {"vector_bytes_per_cycle", t.vector_bytes_per_cycle},
                      {"ub_align_bytes", t.ub_align_bytes},
                      {"l0_align_bytes", t.l0_align_bytes},
                      {"gm_line_bytes", t.gm_line_bytes},
                      {"launch_overhead_us", t.launch_overhead_us}};
  if (t.link_bandwidth_gbps > 0) {
    j["link_bandwidth_gbps"] = t.link_bandwidth_gbps;
    j["link_latency_us"] = t.link_latency_us;
  }
  return j.dump();
}

NpuTarget load_npu_target(const std::string& path) {
  // A target file is a few hundred bytes; 1 MB is generous.
  return parse_npu_target(read_regular_file(path, "NPU target file", 1 << 20), "NPU target file '" + path + "'");
}

const NpuTarget& default_npu_target() {
  static const NpuTarget t = [] {
    NpuTarget d = parse_npu_target(kDefaultNpuTargetJson, "built-in NPU target");
    d.file = "built-in (schedules/targets/ascend910_like.json)";
    return d;
  }();
  return t;
}

}  // namespace gaf
