// The tuned-schedule database: JSON (schema "graph-autofusion/schedules/1") keyed by group
// signature + target ("host", "npu-tile") + machine (CPU features and cores; for npu-tile the NPU
// target's name and a hash of its numbers, npu_machine_key). gaf-tune writes it;
// gaf run/compile read it: a group found there uses its tuned parameters, others the defaults.
// Schema: docs/USER_GUIDE.md ("Tuned schedules"). No Halide here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedules/host_params.h"
#include "schedules/npu_params.h"

namespace gaf {

struct TunedSchedule {
  std::string signature;  // FusionGroup::signature
  std::string target;     // "host" or "npu-tile"
  std::string machine;    // host_machine_key() or npu_machine_key()
  std::string label;      // what the group is, for people ("MatMul+GELU")
  MatMulParams matmul;    // host entries
  RowParams rows;         // host entries
  NpuScheduleParams npu;  // npu-tile entries
  // Host: median measured time with the default parameters and with these. npu-tile: the NPU
  // simulator's modeled time (npu_modeled_time total), in ms too.
  double default_ms = 0;
  double best_ms = 0;
  int trials = 0;  // candidates measured
  // Host: set when gaf-tune's guard measured the group's members run apart (each its own kernel)
  // faster than the group fused (best_ms): this many ms. gaf run / compile with this database
  // then plan those nodes apart (GAF-NF030), the guard of `gaf run --check-fusion` made lasting.
  std::optional<double> apart_ms;
  std::string date;  // YYYY-MM-DD
};

class ScheduleDb {
 public:
  // Reads `path`. A missing file is an empty database when `missing_ok`, else an error; a
  // corrupt or mismatched file is a GafError naming the file, the entry and the field.
  static ScheduleDb load(const std::string& path, bool missing_ok);
  // Writes atomically (a failure leaves the old file).
  void save(const std::string& path) const;

  const TunedSchedule* find(const std::string& signature, const std::string& target, const std::string& machine) const;
  // Inserts or replaces the entry with the same key.
  void put(const TunedSchedule& s);
  const std::vector<TunedSchedule>& entries() const { return entries_; }

 private:
  std::vector<TunedSchedule> entries_;
};

// `defaults` with the tuned fields of `s` applied.
HostScheduleParams with_tuned(HostScheduleParams defaults, const TunedSchedule& s);

// Legal host parameters: the accumulator block fits `vector_registers` with room for the B
// vectors and the A broadcast, k_unroll in {0, 1, 2, 4, 8}, task_elems in [256, 2^24].
bool legal_host_params(const MatMulParams& m, const RowParams& r, int vector_registers);

}  // namespace gaf
