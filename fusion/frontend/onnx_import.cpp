#include "fusion/frontend/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <set>

#include "fusion/ops/registry.h"
#include "runtime/memory_budget.h"
#include "runtime/tensor_io.h"

namespace gaf {

namespace {

TensorType type_from_onnx(const onnx::TypeProto& tp, const std::string& what) {
  if (!tp.has_tensor_type()) throw GafError(what + " is not a tensor (sequences/maps are not supported)");
  const auto& tt = tp.tensor_type();
  TensorType t;
  std::optional<DType> d = dtype_of_onnx(tt.elem_type());
  if (!d)
    throw GafError(what + " has element type " + onnx_type_name(tt.elem_type()) + " (" + kSupportedOnnxTypes +
                   " are supported)");
  t.dtype = *d;
  if (!tt.has_shape()) {
    t.rank_known = false;
    return t;
  }
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value())
      t.dims.emplace_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      t.dims.push_back(Dim::sym(d.dim_param()));
    else
      t.dims.emplace_back();
  }
  return t;
}

AttrValue attr_from_onnx(const onnx::AttributeProto& a, const std::string& what, const std::string& dir) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return a.f();
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::TENSOR: return tensor_from_proto(a.t(), what, dir);
    default:
      throw GafError(what + ": attribute type " + onnx::AttributeProto_AttributeType_Name(a.type()) +
                     " is not supported");
  }
}

}  // namespace

Graph import_onnx_model(onnx::ModelProto& model, const std::string& model_dir, const std::string& what) {
  if (!model.has_graph()) throw GafError(what + ": the model has no graph");
  const onnx::GraphProto& gp = model.graph();
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) throw GafError(what + ": the model imports no default-domain (ai.onnx) opset");
  if (opset > kMaxOnnxOpset)
    throw GafError(what + ": the model imports ai.onnx opset " + std::to_string(opset) +
                   "; this importer supports opsets up to " + std::to_string(kMaxOnnxOpset));

  Graph g;
  g.name = gp.name().empty() ? "model" : gp.name();
  const OpRegistry& reg = OpRegistry::global();

  // Every unsupported op at once, so the user sees the whole list in one run.
  std::vector<std::string> unsupported;
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    // onnxruntime's collectives, in graphs that are already sharded.
    bool collective = n.domain() == "com.microsoft" && (n.op_type() == "AllReduce" || n.op_type() == "AllGather");
    if ((!default_domain && !collective) || !reg.find(n.op_type()))
      unsupported.push_back("(" + (default_domain ? "" : n.domain() + ".") + n.op_type() + ", '" +
                            (n.name().empty() ? "#" + std::to_string(i) : n.name()) + "')");
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string& u : unsupported) list += (list.empty() ? "" : ", ") + u;
    std::string hint;
    for (const std::string& c : branch_condition_inputs(gp))
      hint += "; the If on input '" + c + "' runs with its value given (--branch " + c + "=true|false)";
    throw GafError(what + ": " + std::to_string(unsupported.size()) + " unsupported op(s): " + list + hint);
  }

  // The weights' declared sizes against the memory budget before any is allocated.
  int64_t weight_bytes = 0;
  for (const auto& init : gp.initializer())
    weight_bytes = checked_add(weight_bytes, tensor_proto_bytes(init, what + ": initializer '" + init.name() + "'"),
                               "weight bytes");
  check_memory_budget(weight_bytes, what + ": the model's " + std::to_string(gp.initializer_size()) + " weights");
  for (onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer())
    g.add_initializer(init.name(),
                      take_tensor_from_proto(init, what + ": initializer '" + init.name() + "'", model_dir));
  for (const auto& in : gp.input()) {
    if (g.has_value(in.name())) continue;  // old exporters list initializers as inputs too
    g.add_value(in.name(), type_from_onnx(in.type(), what + ": input '" + in.name() + "'"));
    g.inputs().push_back(in.name());
  }
  std::set<std::string> node_names;
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.name = np.name();
    if (n.name.empty() || node_names.count(n.name)) n.name = np.op_type() + "_" + std::to_string(i);
    node_names.insert(n.name);
    n.op_type = np.op_type();
    std::string nwhat = what + ": node '" + n.name + "' (" + n.op_type + ")";
    for (const auto& a : np.attribute()) n.attrs.set(a.name(), attr_from_onnx(a, nwhat, model_dir));
    n.attrs.set("_opset", opset);
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      if (g.has_value(o)) throw GafError(nwhat + ": output '" + o + "' is already defined elsewhere in the model");
      TensorType unknown;
      unknown.rank_known = false;
      g.add_value(o, unknown);
    }
    g.add_node(std::move(n));
  }
  for (const auto& out : gp.output()) {
    if (!g.has_value(out.name())) throw GafError(what + ": graph output '" + out.name() + "' is produced by no node");
    if (out.has_type()) {
      TensorType declared = type_from_onnx(out.type(), what + ": output '" + out.name() + "'");
      Value& v = g.value(out.name());
      if (!v.type.rank_known) v.type = declared;  // symbol names for the importer's consumers
    }
    g.outputs().push_back(out.name());
  }
  for (const Node& n : g.nodes())
    for (const std::string& in : n.inputs)
      if (!in.empty() && !g.has_value(in))
        throw GafError(what + ": node '" + n.name + "' (" + n.op_type + "): input '" + in +
                       "' is dangling (no graph input, initializer or node produces it)");
  try {
    g.validate();
  } catch (const GafError& e) {
    throw GafError(what + ": " + e.what());
  }
  return g;
}

namespace {

onnx::ModelProto parse_onnx_file(const std::string& path) {
  // Protobuf messages are limited to 2 GB (larger models keep their weights as external data).
  {
    RegularFile f(path, "model file");
    if (f.size() > INT32_MAX)
      throw GafError(path + ": model file of " + std::to_string(f.size()) + " bytes is larger than " +
                     std::to_string(INT32_MAX) + " bytes");
  }
  // Parsed from the stream: the file's bytes are not held beside the message's.
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in))
    throw GafError(path + ": not a valid ONNX model (protobuf parse failed; truncated or not ONNX?)");
  if (!model.has_graph() || (model.graph().node_size() == 0 && model.graph().output_size() == 0))
    throw GafError(path + ": not a valid ONNX model (no graph)");
  return model;
}

}  // namespace

std::vector<std::string> onnx_branch_inputs(const std::string& path) {
  return branch_condition_inputs(parse_onnx_file(path).graph());
}

Graph import_onnx_file(const std::string& path, const BranchConditions& branches) {
  onnx::ModelProto model = parse_onnx_file(path);
  inline_bound_branches(*model.mutable_graph(), branches, path);
  std::string dir = std::filesystem::absolute(path).parent_path().string();
  return import_onnx_model(model, dir, path);
}

}  // namespace gaf
