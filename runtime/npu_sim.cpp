#include "runtime/npu_sim.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <HalideRuntime.h>
#include <nlohmann/json.hpp>

#include "runtime/tensor.h"

namespace gaf {

const char* npu_role_name(NpuRole r) {
  switch (r) {
    case NpuRole::Gm: return "GM";
    case NpuRole::L1: return "L1";
    case NpuRole::L0A: return "L0A";
    case NpuRole::L0B: return "L0B";
    case NpuRole::L0C: return "L0C";
    case NpuRole::UbCopy: return "UB (copy)";
    case NpuRole::UbCompute: return "UB";
  }
  return "?";
}

std::string npu_stage_map_json(const NpuStageMap& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, info] : m)
    j[name] = {{"role", npu_role_name(info.role)},
               {"elem_bytes", info.elem_bytes},
               {"ops", info.ops_per_element},
               {"tile", info.tile}};
  return j.dump();
}

NpuStageMap parse_npu_stage_map(const std::string& text, const std::string& origin) {
  NpuStageMap m;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::json& f = it.value();
      NpuFuncInfo info;
      const std::string role = f.at("role").get<std::string>();
      bool known = false;
      for (NpuRole r :
           {NpuRole::Gm, NpuRole::L1, NpuRole::L0A, NpuRole::L0B, NpuRole::L0C, NpuRole::UbCopy, NpuRole::UbCompute})
        if (role == npu_role_name(r)) {
          info.role = r;
          known = true;
        }
      if (!known) throw GafError(origin + ": stage '" + name + "': unknown role '" + role + "'");
      info.elem_bytes = f.at("elem_bytes").get<int>();
      info.ops_per_element = f.at("ops").get<double>();
      info.tile = f.at("tile").get<bool>();
      m[name] = info;
    }
  } catch (const nlohmann::json::exception& e) {
    throw GafError(origin + ": malformed NPU stage map: " + e.what());
  }
  return m;
}

const char* npu_buffer_name(int b) {
  static const char* names[kNpuBuffers] = {"L1", "UB", "L0A", "L0B", "L0C"};
  return b >= 0 && b < kNpuBuffers ? names[b] : "?";
}

int64_t npu_buffer_capacity(const NpuTarget& t, int b) {
  switch (b) {
    case kL1: return t.l1_bytes;
    case kUB: return t.ub_bytes;
    case kL0A: return t.l0a_bytes;
    case kL0B: return t.l0b_bytes;
    case kL0C: return t.l0c_bytes;
  }
  return 0;
}

NpuCounts& NpuCounts::operator+=(const NpuCounts& o) {
  launches += o.launches;
  gm_read_bytes += o.gm_read_bytes;
  gm_write_bytes += o.gm_write_bytes;
  l1_to_l0_bytes += o.l1_to_l0_bytes;
  cube_macs += o.cube_macs;
  vector_ops += o.vector_ops;
  tiles += o.tiles;
  link_bytes += o.link_bytes;
  link_steps += o.link_steps;
  for (int b = 0; b < kNpuBuffers; ++b) peak_bytes[b] = std::max(peak_bytes[b], o.peak_bytes[b]);
  return *this;
}

NpuModeledTime npu_modeled_time(const NpuCounts& c, const NpuTarget& t) {
  NpuModeledTime m;
  if (c.link_steps > 0)
    m.link_us = static_cast<double>(c.link_steps) * t.link_latency_us +
                (t.link_bandwidth_gbps > 0 ? static_cast<double>(c.link_bytes) / (t.link_bandwidth_gbps * 1e3) : 0.0);
  m.total_us = m.link_us;
  if (c.launches == 0) return m;
  const double tiles_per_launch = static_cast<double>(c.tiles) / static_cast<double>(c.launches);
  m.cores_used = static_cast<int>(std::clamp<double>(tiles_per_launch, 1, t.ai_cores));
  const double cycles_per_us = t.clock_ghz * 1e3;
  const double gm_bytes_per_us = t.gm_bandwidth_gbps * 1e3;
  m.dma_in_us = static_cast<double>(c.gm_read_bytes) / gm_bytes_per_us;
  m.dma_out_us = static_cast<double>(c.gm_write_bytes) / gm_bytes_per_us;
  m.cube_us = static_cast<double>(c.cube_macs) / (t.cube_fp32_macs_per_cycle * m.cores_used) / cycles_per_us;
  m.vector_us = c.vector_ops * 4.0 / (t.vector_bytes_per_cycle * m.cores_used) / cycles_per_us;
  m.launch_us = static_cast<double>(c.launches) * t.launch_overhead_us;
  m.total_us = m.link_us + m.launch_us + std::max({m.dma_in_us + m.dma_out_us, m.cube_us, m.vector_us});
  return m;
}

namespace {

// The open session: one at a time (kernels run one after another); events from the worker
// threads of that kernel's parallel loops.
struct Active {
  const NpuStageMap* map = nullptr;
  std::atomic<int64_t> gm_read{0}, gm_write{0}, l1_to_l0{0}, macs{0}, tiles{0};
  std::atomic<int64_t> vector_milli_ops{0};
  std::array<std::atomic<int64_t>, kNpuBuffers> peak{};
  std::atomic<int32_t> next_id{1};
};
Active g_active;
std::mutex g_session_mutex;
std::atomic<int> g_generation{0};

int buffer_of(NpuRole r) {
  switch (r) {
    case NpuRole::L1: return kL1;
    case NpuRole::L0A: return kL0A;
    case NpuRole::L0B: return kL0B;
    case NpuRole::L0C: return kL0C;
    case NpuRole::UbCopy:
    case NpuRole::UbCompute: return kUB;
    case NpuRole::Gm: return -1;
  }
  return -1;
}

// Per host thread (= one simulated core's local buffers): the live realisations and the cube
// step being assembled from its L0A and L0B copies.
struct ThreadState {
  int generation = -1;
  std::array<int64_t, kNpuBuffers> live{};
  std::vector<std::pair<const char*, int64_t>> open;  // (func, bytes) of open realisations
  int64_t a_rows = 0, a_k = 0, b_cols = 0;
  std::unordered_map<const char*, const NpuFuncInfo*> cache;  // func name pointer -> info
};
thread_local ThreadState t_state;

ThreadState& state() {
  int gen = g_generation.load(std::memory_order_acquire);
  if (t_state.generation != gen) {
    t_state = ThreadState();
    t_state.generation = gen;
  }
  return t_state;
}

const NpuFuncInfo* info_of(ThreadState& s, const char* func) {
  auto it = s.cache.find(func);
  if (it != s.cache.end()) return it->second;
  const NpuFuncInfo* info = nullptr;
  if (g_active.map) {
    auto m = g_active.map->find(func);
    if (m != g_active.map->end()) info = &m->second;
  }
  s.cache.emplace(func, info);
  return info;
}

void atomic_max(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

int64_t region_elements(const halide_trace_event_t* e) {
  int64_t n = 1;
  for (int d = 0; d < e->dimensions / 2; ++d) n *= e->coordinates[2 * d + 1];
  return n;
}

int64_t extent(const halide_trace_event_t* e, int d) {
  return 2 * d + 1 < e->dimensions ? e->coordinates[2 * d + 1] : 1;
}

void begin_realization(ThreadState& s, const NpuFuncInfo& info, const halide_trace_event_t* e) {
  int buf = buffer_of(info.role);
  if (buf < 0) return;
  const int64_t elems = region_elements(e);
  const int64_t bytes = elems * info.elem_bytes;
  s.live[buf] += bytes;
  s.open.emplace_back(e->func, bytes);
  atomic_max(g_active.peak[buf], s.live[buf]);
  if (info.tile) g_active.tiles.fetch_add(1, std::memory_order_relaxed);
  switch (info.role) {
    case NpuRole::L0A:  // a_op(k, row): k x rows
      s.a_k = extent(e, 0);
      s.a_rows = extent(e, 1);
      g_active.l1_to_l0.fetch_add(bytes, std::memory_order_relaxed);
      break;
    case NpuRole::L0B:  // b_op(n, k, batch)
      s.b_cols = extent(e, 0) * extent(e, 2);
      g_active.l1_to_l0.fetch_add(bytes, std::memory_order_relaxed);
      break;
    case NpuRole::L1:
    case NpuRole::UbCopy:  // a staging copy out of GM: what it realises is what the DMA reads
      g_active.gm_read.fetch_add(bytes, std::memory_order_relaxed);
      break;
    case NpuRole::UbCompute:
      g_active.vector_milli_ops.fetch_add(static_cast<int64_t>(elems * info.ops_per_element * 1000),
                                          std::memory_order_relaxed);
      break;
    default: break;
  }
  if (s.a_k > 0 && s.b_cols > 0) {  // both operands of one cube step are in L0
    g_active.macs.fetch_add(s.a_rows * s.a_k * s.b_cols, std::memory_order_relaxed);
    s.a_k = s.b_cols = 0;
  }
}

void end_realization(ThreadState& s, const NpuFuncInfo& info, const halide_trace_event_t* e) {
  int buf = buffer_of(info.role);
  if (buf < 0) return;
  for (auto it = s.open.rbegin(); it != s.open.rend(); ++it) {
    if (it->first != e->func) continue;
    s.live[buf] -= it->second;
    s.open.erase(std::next(it).base());
    return;
  }
}

}  // namespace

NpuSimulator::Session::Session(const NpuStageMap& map, NpuCounts& out) {
  g_session_mutex.lock();
  g_active.map = &map;
  g_active.gm_read = g_active.gm_write = g_active.l1_to_l0 = g_active.macs = g_active.tiles = 0;
  g_active.vector_milli_ops = 0;
  for (auto& p : g_active.peak) p = 0;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  out_ = &out;
  if (std::getenv("GAF_NPU_TRACE"))
    for (const auto& [name, info] : map)
      std::fprintf(stderr, "npu stage: %s %s\n", name.c_str(), npu_role_name(info.role));
}

NpuSimulator::Session::~Session() {
  NpuCounts c;
  c.launches = 1;
  c.gm_read_bytes = g_active.gm_read;
  c.gm_write_bytes = g_active.gm_write;
  c.l1_to_l0_bytes = g_active.l1_to_l0;
  c.cube_macs = g_active.macs;
  c.vector_ops = static_cast<double>(g_active.vector_milli_ops) / 1000.0;
  c.tiles = g_active.tiles;
  for (int b = 0; b < kNpuBuffers; ++b) c.peak_bytes[b] = g_active.peak[b];
  *out_ += c;
  g_active.map = nullptr;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_session_mutex.unlock();
}

int32_t NpuSimulator::on_event(const halide_trace_event_t* e) {
  int32_t id = g_active.next_id.fetch_add(1, std::memory_order_relaxed) & 0x3fffffff;
  static const bool debug = std::getenv("GAF_NPU_TRACE") != nullptr;  // every event on stderr
  if (debug)
    std::fprintf(stderr, "npu trace: %s event %d lanes %d dims %d\n", e->func ? e->func : "?",
                 static_cast<int>(e->event), e->type.lanes, e->dimensions);
  if (!g_active.map || !e->func) return id;
  ThreadState& s = state();
  const NpuFuncInfo* info = info_of(s, e->func);
  if (!info) return id;
  switch (e->event) {
    case halide_trace_store:
      if (info->role == NpuRole::Gm) {
        g_active.gm_write.fetch_add(static_cast<int64_t>(e->type.lanes) * e->type.bytes(), std::memory_order_relaxed);
        // A value computed straight into its GM buffer: its vector work is done per stored element.
        if (info->ops_per_element > 0)
          g_active.vector_milli_ops.fetch_add(static_cast<int64_t>(e->type.lanes * info->ops_per_element * 1000),
                                              std::memory_order_relaxed);
      }
      break;
    case halide_trace_begin_realization: begin_realization(s, *info, e); break;
    case halide_trace_end_realization: end_realization(s, *info, e); break;
    default: break;
  }
  return id;
}

}  // namespace gaf
