// Runs the npu-tile AOT library bert_npu (builtin:bert-base, 1 layer, seq 16; test/CMakeLists.txt)
// with the plan runtime on IN_DIR/{hidden_states,attention_mask}.npy into
// OUT_DIR/last_hidden_state.npy and prints what the NPU simulator counted over all kernels:
// "npu: launches L gm_read R gm_write W macs M" and the modeled time.
#include <cstdio>
#include <map>
#include <string>

#include "bert1_npu.h"
#include "runtime/plan_runner.h"
#include "runtime/tensor_io.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: aot_npu_run IN_DIR OUT_DIR\n");
    return 1;
  }
  try {
    gaf::PlanRunner runner(BERT_NPU_PLAN, bert1_npu_library);
    if (!runner.npu()) throw gaf::GafError("the plan is not an npu-tile plan");
    std::map<std::string, gaf::Tensor> in;
    for (const auto& spec : runner.inputs())
      in[spec.name] = gaf::read_npy(std::string(argv[1]) + "/" + spec.name + ".npy");
    auto out = runner.run(in);
    for (const auto& [name, t] : out) gaf::write_npy(std::string(argv[2]) + "/" + name + ".npy", t);
    gaf::NpuCounts total;
    double us = 0;
    for (const gaf::NpuCounts& c : runner.npu_counts()) {
      total += c;
      us += gaf::npu_modeled_time(c, runner.npu_target()).total_us;
    }
    std::printf("npu: launches %lld gm_read %lld gm_write %lld macs %lld\n", static_cast<long long>(total.launches),
                static_cast<long long>(total.gm_read_bytes), static_cast<long long>(total.gm_write_bytes),
                static_cast<long long>(total.cube_macs));
    std::printf("modeled: %.3f us on %s\n", us, runner.npu_target().name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aot_npu_run: %s\n", e.what());
    return 1;
  }
  return 0;
}
