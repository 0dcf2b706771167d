// Runs the library bert_dyn (builtin:bert-base, 1 layer, compiled once for seq 1..256; see
// test/CMakeLists.txt) on IN_DIR/{hidden_states,attention_mask}.npy of any sequence length into
// OUT_DIR/last_hidden_state.npy, through the plan runtime only (no libHalide). A length outside
// the range is a one-line error and exit 1.
#include <cstdio>
#include <map>
#include <string>

#include "bert_dyn.h"
#include "runtime/plan_runner.h"
#include "runtime/tensor_io.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: aot_dynamic_run IN_DIR OUT_DIR\n");
    return 1;
  }
  try {
    gaf::PlanRunner runner(BERT_DYN_PLAN, bert_dyn_library);
    std::map<std::string, gaf::Tensor> in;
    for (const auto& spec : runner.inputs())
      in[spec.name] = gaf::read_npy(std::string(argv[1]) + "/" + spec.name + ".npy");
    auto out = runner.run(in);
    gaf::write_npy(std::string(argv[2]) + "/last_hidden_state.npy", out.at("last_hidden_state"));
  } catch (const gaf::GafError& e) {
    std::fprintf(stderr, "aot_dynamic_run: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
