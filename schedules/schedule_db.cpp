#include "schedules/schedule_db.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/json_text.h"
#include "runtime/tensor.h"
#include "runtime/tensor_io.h"

namespace gaf {

namespace {

using nlohmann::json;

constexpr const char* kSchema = "graph-autofusion/schedules/1";

// Field readers: each failure names the file, the entry and the field.
struct EntryReader {
  const std::string& path;
  size_t index;
  const json& j;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw GafError(path + ": entry " + std::to_string(index) + ": field '" + field + "' " + what);
  }
  const json& at(const json& obj, const std::string& key, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key)) fail(field, "is missing");
    return obj.at(key);
  }
  std::string str(const std::string& key) const {
    const json& v = at(j, key, key);
    if (!v.is_string()) fail(key, "must be a string");
    return v.get<std::string>();
  }
  double number(const std::string& key) const {
    const json& v = at(j, key, key);
    if (!v.is_number() || v.get<double>() < 0) fail(key, "must be a number >= 0");
    return v.get<double>();
  }
  int64_t integer(const json& obj, const std::string& key, const std::string& field, int64_t lo, int64_t hi) const {
    const json& v = at(obj, key, field);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail(field, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v.get<int64_t>();
  }
};

TunedSchedule read_entry(const std::string& path, size_t index, const json& j) {
  EntryReader r{path, index, j};
  if (!j.is_object()) r.fail("(entry)", "must be an object");
  TunedSchedule s;
  s.signature = r.str("signature");
  s.target = r.str("target");
  if (s.target != "host" && s.target != "npu-tile") r.fail("target", "must be \"host\" or \"npu-tile\"");
  s.machine = r.str("machine");
  s.label = j.contains("label") ? r.str("label") : "";
  s.date = r.str("date");
  s.default_ms = r.number("default_ms");
  s.best_ms = r.number("best_ms");
  s.trials = static_cast<int>(r.integer(j, "trials", "trials", 0, 1 << 30));
  const json& p = r.at(j, "params", "params");
  if (s.target == "npu-tile") {
    const json& n = r.at(p, "npu", "params.npu");
    auto side = [&](const char* key) {
      return r.integer(n, key, std::string("params.npu.") + key, 0, int64_t{1} << 32);
    };
    s.npu = NpuScheduleParams{side("m"), side("n"), side("k_l1"), side("rows"), side("chunk")};
    return s;
  }
  if (j.contains("apart_ms")) s.apart_ms = r.number("apart_ms");  // optional: only where fusion lost
  const json& mm = r.at(p, "matmul", "params.matmul");
  s.matmul.vectors = static_cast<int>(r.integer(mm, "vectors", "params.matmul.vectors", 1, 16));
  s.matmul.rows = static_cast<int>(r.integer(mm, "rows", "params.matmul.rows", 1, 32));
  s.matmul.k_unroll = static_cast<int>(r.integer(mm, "k_unroll", "params.matmul.k_unroll", 0, 16));
  if (mm.contains("a_block_bytes"))  // optional: entries written before it existed keep the default
    s.matmul.a_block_bytes = r.integer(mm, "a_block_bytes", "params.matmul.a_block_bytes", 0, int64_t{1} << 32);
  if (mm.contains("k_block"))  // optional likewise
    s.matmul.k_block = static_cast<int>(r.integer(mm, "k_block", "params.matmul.k_block", 0, 1 << 20));
  const json& rows = r.at(p, "rows", "params.rows");
  s.rows.task_elems = r.integer(rows, "task_elems", "params.rows.task_elems", 1, int64_t{1} << 32);
  return s;
}

json write_params(const TunedSchedule& s) {
  if (s.target == "npu-tile")
    return {
        {"npu", {{"m", s.npu.m}, {"n", s.npu.n}, {"k_l1", s.npu.k_l1}, {"rows", s.npu.rows}, {"chunk", s.npu.chunk}}}};
  return {{"matmul",
           {{"vectors", s.matmul.vectors},
            {"rows", s.matmul.rows},
            {"k_unroll", s.matmul.k_unroll},
            {"a_block_bytes", s.matmul.a_block_bytes},
            {"k_block", s.matmul.k_block}}},
          {"rows", {{"task_elems", s.rows.task_elems}}}};
}

json write_entry(const TunedSchedule& s) {
  json j{{"signature", s.signature}, {"target", s.target},        {"machine", s.machine},
         {"label", s.label},         {"params", write_params(s)}, {"default_ms", s.default_ms},
         {"best_ms", s.best_ms},     {"trials", s.trials},        {"date", s.date}};
  if (s.apart_ms) j["apart_ms"] = *s.apart_ms;
  return j;
}

}  // namespace

ScheduleDb ScheduleDb::load(const std::string& path, bool missing_ok) {
  ScheduleDb db;
  if (!std::filesystem::exists(path)) {
    if (missing_ok) return db;
    throw GafError(path + ": schedule database not found");
  }
  // A database holds a few KB per tuned group; 256 MB is far beyond any real one.
  const std::string text = read_regular_file(path, "schedule database", 256 << 20);
  json j = parse_json_text(text, path);
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    throw GafError(path + ": not a schedule database (no \"schema\" field)");
  if (j["schema"] != kSchema)
    throw GafError(path + ": schema '" + j["schema"].get<std::string>() + "' is not '" + kSchema + "'");
  if (!j.contains("entries") || !j["entries"].is_array()) throw GafError(path + ": field 'entries' must be an array");
  for (size_t i = 0; i < j["entries"].size(); ++i) db.put(read_entry(path, i, j["entries"][i]));
  return db;
}

void ScheduleDb::save(const std::string& path) const {
  json entries = json::array();
  for (const TunedSchedule& s : entries_) entries.push_back(write_entry(s));
  std::string text = json{{"schema", kSchema}, {"entries", entries}}.dump(2) + "\n";
  write_file_atomically(path, {text});
}

const TunedSchedule* ScheduleDb::find(const std::string& signature, const std::string& target,
                                      const std::string& machine) const {
  for (const TunedSchedule& s : entries_)
    if (s.signature == signature && s.target == target && s.machine == machine) return &s;
  return nullptr;
}

void ScheduleDb::put(const TunedSchedule& s) {
  for (TunedSchedule& e : entries_)
    if (e.signature == s.signature && e.target == s.target && e.machine == s.machine) {
      e = s;
      return;
    }
  entries_.push_back(s);
}

HostScheduleParams with_tuned(HostScheduleParams defaults, const TunedSchedule& s) {
  defaults.matmul = s.matmul;
  defaults.rows = s.rows;
  return defaults;
}

bool legal_host_params(const MatMulParams& m, const RowParams& r, int vector_registers) {
  bool ku_ok = m.k_unroll == 0 || m.k_unroll == 1 || m.k_unroll == 2 || m.k_unroll == 4 || m.k_unroll == 8;
  return m.vectors >= 1 && m.rows >= 1 && m.vectors * m.rows + m.vectors + 1 <= vector_registers && ku_ok &&
         m.k_block >= 0 && r.task_elems >= 256 && r.task_elems <= (int64_t{1} << 24);
}

}  // namespace gaf
