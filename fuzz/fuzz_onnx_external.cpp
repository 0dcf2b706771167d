// libFuzzer harness: a fixed ONNX model (y = x + w, w float32[4,4] stored as external data)
// whose external data file is the fuzzed bytes. The first two bytes choose the offset and
// length fields the model declares, so ranges inside, across and past the end are all tried.
#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "fusion/frontend/onnx_import.h"
#include "runtime/tensor.h"

namespace {

std::string model_bytes(int offset, int length) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("external");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const char* k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add_kv("location", "weights.bin");
  if (offset >= 0) add_kv("offset", std::to_string(offset));
  if (length >= 0) add_kv("length", std::to_string(length));
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // 255 = field absent; else the byte itself (64 bytes = the tensor's size is among them).
  const int offset = data[0] == 255 ? -1 : data[0], length = data[1] == 255 ? -1 : data[1];
  const std::string model = model_bytes(offset, length);
  const std::string path =
      gaf::fuzz::write_scratch("external.onnx", reinterpret_cast<const uint8_t*>(model.data()), model.size());
  gaf::fuzz::write_scratch("weights.bin", data + 2, size - 2);
  try {
    gaf::Graph g = gaf::import_onnx_file(path);
    const gaf::Tensor& w = *g.value("w").constant;
    if (w.nbytes() != 64) __builtin_trap();
    volatile uint8_t first = *static_cast<const uint8_t*>(w.raw());  // external bytes are read on first use
    (void)first;
  } catch (const gaf::GafError&) {
  }
  return 0;
}
