// libFuzzer harness: an NPU target file on arbitrary bytes; an accepted target must survive
// npu_target_json and parse back. Any outcome but a target or a GafError is a bug.
#include "fuzz/fuzz_util.h"
#include "runtime/npu_target.h"
#include "runtime/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gaf::fuzz::write_scratch("target.json", data, size);
  try {
    gaf::NpuTarget t = gaf::load_npu_target(path);
    gaf::NpuTarget back = gaf::parse_npu_target(gaf::npu_target_json(t), "round trip");
    if (back.ai_cores != t.ai_cores || back.ub_bytes != t.ub_bytes) __builtin_trap();
  } catch (const gaf::GafError&) {
  }
  return 0;
}
