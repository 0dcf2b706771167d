// Reading and writing tensors: NumPy .npy (every dtype but bfloat16, which NumPy lacks; C order) and ONNX TensorProto
// .pb files (the format of ONNX's backend test data). Errors are GafError naming the file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/file_io.h"
#include "runtime/tensor.h"

namespace onnx {
class TensorProto;
}

namespace gaf {

Tensor read_npy(const std::string& path);
// Writes atomically: a temporary file renamed into place, so a failure leaves no partial file.
void write_npy(const std::string& path, const Tensor& t);

// ONNX TensorProto. `external_dir`: folder that external data locations are relative to (and
// must stay inside); empty = external data not allowed.
// The name of an ONNX TensorProto.DataType code, for messages (dtype_of_onnx: runtime/tensor.h).
std::string onnx_type_name(int onnx_type);

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what, const std::string& external_dir = "");
// The same, but a large tensor's raw_data is moved out of `p` into a deferred tensor (copied into
// its storage when first read): an ONNX model's weights are held once, and not read by planning.
Tensor take_tensor_from_proto(onnx::TensorProto& p, const std::string& what, const std::string& external_dir);
// The byte size its dims and type declare (overflow-checked; GafError naming `what`), without
// reading its data: the importer sums these against the memory budget before allocating.
int64_t tensor_proto_bytes(const onnx::TensorProto& p, const std::string& what);
Tensor read_tensor_pb(const std::string& path);

// Which one by extension (.npy or .pb).
Tensor read_tensor_file(const std::string& path);

}  // namespace gaf
