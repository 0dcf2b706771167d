// libFuzzer harness: read_npy on arbitrary bytes. Any outcome but a tensor or a GafError is a bug.
#include "fuzz/fuzz_util.h"
#include "runtime/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gaf::fuzz::write_scratch("input.npy", data, size);
  try {
    gaf::Tensor t = gaf::read_npy(path);
    if (t.numel() > 0 && t.nbytes() > size) __builtin_trap();  // more data than the file holds
  } catch (const gaf::GafError&) {
  }
  return 0;
}
