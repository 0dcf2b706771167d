// Runs the multi-target library bert_mt (AVX-512 preferred, AVX2 fallback; test/CMakeLists.txt)
// on IN_DIR/{hidden_states,attention_mask}.npy into OUT_DIR/last_hidden_state.npy. With
// "fallback", the CPU is reported to lack AVX-512, so Halide's dispatch wrappers must pick the
// AVX2 variants; prints how many variant choices were refused and how many checked.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "bert_mt.h"
#include "runtime/plan_runner.h"
#include "runtime/tensor_io.h"

namespace {

int checked = 0, refused = 0;

int no_avx512(int count, const uint64_t* features) {
  ++checked;
  for (int bit : {halide_target_feature_avx512, halide_target_feature_avx512_knl, halide_target_feature_avx512_skylake,
                  halide_target_feature_avx512_cannonlake, halide_target_feature_avx512_sapphirerapids})
    if (bit / 64 < count && (features[bit / 64] >> (bit % 64)) & 1) {
      ++refused;
      return 0;
    }
  return halide_default_can_use_target_features(count, features);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: aot_multitarget_run IN_DIR OUT_DIR native|fallback\n");
    return 1;
  }
  if (std::strcmp(argv[3], "fallback") == 0) halide_set_custom_can_use_target_features(no_avx512);
  try {
    gaf::PlanRunner runner(BERT_MT_PLAN, bert_mt_kernels);
    std::map<std::string, gaf::Tensor> in;
    for (const auto& spec : runner.inputs()) in[spec.name] = gaf::read_npy(std::string(argv[1]) + "/" + spec.name + ".npy");
    auto out = runner.run(in);
    gaf::write_npy(std::string(argv[2]) + "/last_hidden_state.npy", out.at("last_hidden_state"));
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "aot_multitarget_run: error: %s\n", e.what());
    return 1;
  }
  std::printf("target checks: %d, refused: %d\n", checked, refused);
  return 0;
}
