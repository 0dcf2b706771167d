// aot_onnx IN_DIR OUT_DIR: runs the model compiled by gaf_add_fused_library(NAME model ...) on
// IN_DIR/<input name>.npy and writes OUT_DIR/<output name>.npy ('/' and ':' in names become '_').
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "model.h"  // generated: model_kernels
#include "runtime/plan_runner.h"
#include "runtime/tensor_io.h"

namespace {

std::string file_name(std::string name) {
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == '/' || c == ':'; }, '_');
  return name + ".npy";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: aot_onnx IN_DIR OUT_DIR\n");
    return 1;
  }
  try {
    gaf::PlanRunner runner(MODEL_PLAN_FILE, model_library);
    std::map<std::string, gaf::Tensor> inputs;
    for (const auto& in : runner.inputs())
      inputs[in.name] = gaf::read_npy(std::string(argv[1]) + "/" + file_name(in.name));
    std::map<std::string, gaf::Tensor> outs = runner.run(inputs);
    for (const auto& [name, t] : outs) {
      std::string path = std::string(argv[2]) + "/" + file_name(name);
      gaf::write_npy(path, t);
      std::printf("wrote %s %s%s\n", path.c_str(), gaf::dtype_name(t.dtype()), gaf::shape_str(t.shape()).c_str());
    }
    std::printf("aot_onnx: %zu groups, arena %lld bytes (lower bound %lld)\n", runner.group_count(),
                static_cast<long long>(runner.arena_bytes()), static_cast<long long>(runner.arena_lower_bound()));
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "aot_onnx: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
