// ONNX ModelProto -> Graph. Initializers become constant values, every node keeps its ONNX name
// (or gets one), and the model's default-domain opset is recorded on each node as the int
// attribute "_opset" (ops whose semantics changed between opsets read it).
#pragma once

#include <string>

#include "fusion/frontend/if_branches.h"
#include "fusion/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace gaf {

// The newest ai.onnx opset the importer knows the semantics of; a newer one is refused.
constexpr int64_t kMaxOnnxOpset = 18;

// Throws GafError naming the file (bad protobuf, unsupported element type) or listing every
// unsupported (op type, node name) pair at once. An If on a graph input named in `branches` is
// replaced by the branch taken (if_branches.h); the input is then gone from the graph.
Graph import_onnx_file(const std::string& path, const BranchConditions& branches = {});
// The bool inputs an If of the model at `path` branches on (if_branches.h); GafError naming the file.
std::vector<std::string> onnx_branch_inputs(const std::string& path);
// Large raw_data weights are moved out of `model` (take_tensor_from_proto), not copied.
Graph import_onnx_model(onnx::ModelProto& model, const std::string& model_dir, const std::string& what);

}  // namespace gaf
