// libFuzzer harness: an ONNX model on arbitrary bytes, imported (initializers, attributes,
// external data relative to the scratch folder) and, when it has no unbound symbols, shape
// inference over it. Any outcome but a graph or a GafError is a bug.
#include "fuzz/fuzz_util.h"
#include "fusion/frontend/onnx_import.h"
#include "fusion/ops/registry.h"
#include "runtime/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gaf::fuzz::write_scratch("model.onnx", data, size);
  try {
    gaf::Graph g = gaf::import_onnx_file(path);
    if (g.unbound_symbols().empty()) gaf::infer_shapes(g);
  } catch (const gaf::GafError&) {
  }
  return 0;
}
