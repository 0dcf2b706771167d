// libFuzzer harness: an ONNX TensorProto (.pb tensor file) on arbitrary bytes, parsed and
// converted as read_tensor_pb does. Any outcome but a tensor or a GafError is a bug.
#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "runtime/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gaf::fuzz::write_scratch("input.pb", data, size);
  try {
    gaf::read_tensor_pb(path);
  } catch (const gaf::GafError&) {
  }
  return 0;
}
