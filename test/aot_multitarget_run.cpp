// Runs a 1-layer builtin:bert-base library compiled at build time (LIB: bert_mt, the multi-target
// one, AVX-512 preferred and AVX2 fallback; or bert_int8, --precision int8; test/CMakeLists.txt)
// on IN_DIR/{hidden_states,attention_mask}.npy into OUT_DIR/last_hidden_state.npy, with its plan
// file or the one given as a fifth argument. With
// "fallback", the CPU is reported to lack AVX-512, so Halide's dispatch wrappers must pick the
// AVX2 variants; prints how many variant choices were refused and how many checked. With
// "short-extent", every kernel is handed its first argument one element short of what it was
// compiled for: Halide's runtime error must come back as a GafError (exit 1), not an abort.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#define GAF_CAT2(a, b) a##b
#define GAF_CAT(a, b) GAF_CAT2(a, b)
#define GAF_STR2(a) #a
#define GAF_STR(a) GAF_STR2(a)
#include GAF_STR(LIB.h)
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
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s IN_DIR OUT_DIR native|fallback|short-extent [PLAN_FILE]\n", argv[0]);
    return 1;
  }
  if (std::strcmp(argv[3], "fallback") == 0) halide_set_custom_can_use_target_features(no_avx512);
  std::map<std::string, gaf::PlanKernel> table;
  for (const gaf_aot_kernel* k = GAF_CAT(LIB, _kernels); k->name; ++k) {
    int (*fn)(void**) = k->argv;
    if (std::strcmp(argv[3], "short-extent") != 0) {
      table[k->name] = fn;
      continue;
    }
    table[k->name] = [fn](void** args) {
      halide_buffer_t b = *static_cast<halide_buffer_t*>(args[0]);
      std::vector<halide_dimension_t> dims(b.dim, b.dim + b.dimensions);
      if (!dims.empty()) dims.back().extent -= 1;
      b.dim = dims.data();
      void* given = args[0];
      args[0] = &b;
      int rc = fn(args);
      args[0] = given;
      return rc;
    };
  }
  try {
    gaf::PlanRunner runner(argc == 5 ? argv[4] : LIB_PLAN, table, GAF_CAT(LIB, _library).table_hash);
    std::map<std::string, gaf::Tensor> in;
    for (const auto& spec : runner.inputs())
      in[spec.name] = gaf::read_npy(std::string(argv[1]) + "/" + spec.name + ".npy");
    auto out = runner.run(in);
    gaf::write_npy(std::string(argv[2]) + "/last_hidden_state.npy", out.at("last_hidden_state"));
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 1;
  }
  std::printf("target checks: %d, refused: %d\n", checked, refused);
  return 0;
}
