// The NPU tile model's simulator: an NPU-target kernel runs on the host with Halide tracing on
// its staging copies and GM buffers, and the simulator *counts* what the trace reports — the
// regions the staging copies out of GM realise (DMA in), the stores to GM buffers (DMA out), the
// regions realised in L1/L0A/L0B/L0C/UB (live bytes per buffer, L1 -> L0 traffic), cube MACs
// (each L0A/L0B pair), vector work (elements realised in UB times the vector ops per element) —
// then turns the counts into modeled time per pipe with the target's numbers (npu_target.h).
// Needs only HalideRuntime.h. (Loads are not traced: Halide 14 drops the load tracing of an
// ImageParam now and then, so GM reads are counted where they are staged.)
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "runtime/npu_target.h"

struct halide_trace_event_t;

namespace gaf {

// What one Func of an NPU kernel is to the simulator.
enum class NpuRole : uint8_t {
  Gm,         // a tensor in GM: traced stores are DMA-out bytes
  L1,         // staging copy GM -> L1 (a MatMul operand panel): its bytes are DMA-in bytes
  L0A,        // staging copy L1 -> L0A (one k block of A); with the L0B copy, one cube step
  L0B,        // staging copy L1 -> L0B
  L0C,        // the cube's accumulator tile
  UbCopy,     // staging copy GM -> UB (a vector input): its bytes are DMA-in bytes
  UbCompute,  // vector work in UB: ops_per_element vector ops for each element realised
};
const char* npu_role_name(NpuRole r);

struct NpuFuncInfo {
  NpuRole role = NpuRole::UbCompute;
  int elem_bytes = 4;
  double ops_per_element = 0;  // UbCompute
  bool tile = false;           // one realisation = one tile of work (the unit spread over cores)
};
using NpuStageMap = std::unordered_map<std::string, NpuFuncInfo>;
// As JSON text ({"func": {"role": "L0A", "elem_bytes": 4, "ops": 0, "tile": false}, ...}), the form
// AOT plan files carry; parsing throws GafError naming `origin` and the Func.
std::string npu_stage_map_json(const NpuStageMap& m);
NpuStageMap parse_npu_stage_map(const std::string& json_text, const std::string& origin);

enum NpuBuffer { kL1, kUB, kL0A, kL0B, kL0C, kNpuBuffers };
const char* npu_buffer_name(int b);
int64_t npu_buffer_capacity(const NpuTarget& t, int b);

// Counts of one kernel (or a sum of kernels): plain numbers, copyable.
struct NpuCounts {
  int64_t launches = 0;
  int64_t gm_read_bytes = 0, gm_write_bytes = 0;
  int64_t l1_to_l0_bytes = 0;
  int64_t cube_macs = 0;
  double vector_ops = 0;  // element-ops
  int64_t tiles = 0;
  std::array<int64_t, kNpuBuffers> peak_bytes{};  // most bytes live at once on one core
  // Collectives (counted by the NPU model, not traced): bytes one rank sends over its link, and
  // ring steps, each a link latency.
  int64_t link_bytes = 0, link_steps = 0;
  NpuCounts& operator+=(const NpuCounts& o);
};

struct NpuModeledTime {
  double dma_in_us = 0, cube_us = 0, vector_us = 0, dma_out_us = 0, launch_us = 0;
  double link_us = 0;  // collectives: not overlapped with the kernels' pipes
  double total_us = 0;
  int cores_used = 0;
};
// Per launch: the tiles spread over min(cores, tiles) cores; DMA in and out share the GM
// bandwidth; the pipes overlap (double-buffered tiles), so a launch takes its launch overhead
// plus the longest of (DMA in + DMA out, cube, vector); collectives add their link time.
NpuModeledTime npu_modeled_time(const NpuCounts& c, const NpuTarget& t);

// Receives the trace events of the kernels run while a Session is open (one at a time).
class NpuSimulator {
 public:
  // Counts into `out` the events of `map`'s Funcs until destroyed. Thread-safe counting: a
  // kernel's tiles may run on several host threads (each one core's buffers).
  class Session {
   public:
    Session(const NpuStageMap& map, NpuCounts& out);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

   private:
    NpuCounts* out_ = nullptr;
  };
  // The handler to install: halide_set_custom_trace (AOT) or a JIT pipeline's custom_trace.
  static int32_t on_event(const halide_trace_event_t* e);
};

}  // namespace gaf
