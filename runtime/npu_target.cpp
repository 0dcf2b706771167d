#include "runtime/npu_target.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/tensor.h"

namespace gaf {

extern const char* const kDefaultNpuTargetJson;  // generated from schedules/targets (CMake)

namespace {

// A field is {"value": V, "source": "..."}; a bare number is accepted too.
double number(const nlohmann::json& j, const std::string& key, const std::string& origin, double min_value) {
  if (!j.contains(key)) throw GafError(origin + ": field '" + key + "' is missing");
  const nlohmann::json& f = j.at(key);
  const nlohmann::json& v = f.is_object() ? (f.contains("value") ? f.at("value") : nlohmann::json()) : f;
  if (!v.is_number())
    throw GafError(origin + ": field '" + key + "' must be a number (or {\"value\": number, \"source\": text})");
  double d = v.get<double>();
  if (!(d >= min_value))
    throw GafError(origin + ": field '" + key + "' is " + v.dump() + ", must be at least " +
                   nlohmann::json(min_value).dump());
  return d;
}

int64_t bytes(const nlohmann::json& j, const std::string& key, const std::string& origin) {
  double d = number(j, key, origin, 1);
  if (d != static_cast<double>(static_cast<int64_t>(d)))
    throw GafError(origin + ": field '" + key + "' must be a whole number of bytes");
  return static_cast<int64_t>(d);
}

}  // namespace

NpuTarget parse_npu_target(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw GafError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw GafError(origin + ": the target must be a JSON object");
  if (j.contains("schema") && j.at("schema") != "graph-autofusion/npu-target/1")
    throw GafError(origin + ": field 'schema' is " + j.at("schema").dump() +
                   ", expected \"graph-autofusion/npu-target/1\"");
  NpuTarget t;
  t.file = origin;
  t.name = j.value("name", std::string("unnamed"));
  t.ai_cores = static_cast<int>(number(j, "ai_cores", origin, 1));
  t.clock_ghz = number(j, "clock_ghz", origin, 1e-6);
  t.gm_bandwidth_gbps = number(j, "gm_bandwidth_gbps", origin, 1e-6);
  t.l1_bytes = bytes(j, "l1_bytes", origin);
  t.ub_bytes = bytes(j, "ub_bytes", origin);
  t.l0a_bytes = bytes(j, "l0a_bytes", origin);
  t.l0b_bytes = bytes(j, "l0b_bytes", origin);
  t.l0c_bytes = bytes(j, "l0c_bytes", origin);
  t.cube_m = static_cast<int>(number(j, "cube_m", origin, 1));
  t.cube_k = static_cast<int>(number(j, "cube_k", origin, 1));
  t.cube_n = static_cast<int>(number(j, "cube_n", origin, 1));
  t.cube_fp32_macs_per_cycle = number(j, "cube_fp32_macs_per_cycle", origin, 1e-6);
  t.vector_bytes_per_cycle = number(j, "vector_bytes_per_cycle", origin, 1e-6);
  t.ub_align_bytes = bytes(j, "ub_align_bytes", origin);
  t.l0_align_bytes = bytes(j, "l0_align_bytes", origin);
  t.gm_line_bytes = bytes(j, "gm_line_bytes", origin);
  t.launch_overhead_us = number(j, "launch_overhead_us", origin, 0);
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
  return j.dump();
}

NpuTarget load_npu_target(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw GafError("NPU target file '" + path + "': cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_npu_target(ss.str(), "NPU target file '" + path + "'");
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
