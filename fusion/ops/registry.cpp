#include "fusion/ops/registry.h"

#include "runtime/index_range.h"

#include <algorithm>

#include "fusion/ops/families.h"
#include "runtime/memory_budget.h"

namespace gaf {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Elementwise: return "elementwise";
    case OpClass::Broadcast: return "broadcast";
    case OpClass::Injective: return "injective";
    case OpClass::Reduction: return "reduction";
    case OpClass::MatMul: return "matmul";
    case OpClass::Comm: return "comm";
    case OpClass::Opaque: return "opaque";
  }
  return "?";
}

InferContext::InferContext(const Node& node, std::vector<const TensorDesc*> in_types,
                           std::vector<const Tensor*> in_values)
    : node_(node), types_(std::move(in_types)), values_(std::move(in_values)) {
  values_.resize(types_.size(), nullptr);
}

const TensorDesc& InferContext::input(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but absent");
  return *types_[i];
}

const Tensor& InferContext::value(int i) const {
  if (!has_value(i))
    fail("input " + std::to_string(i) + " ('" +
         (i < static_cast<int>(node_.inputs.size()) ? node_.inputs[i] : std::string("?")) +
         "') must be a constant known before execution (dynamic shapes are not supported)");
  return *values_[i];
}

void InferContext::fail(const std::string& what) const {
  throw GafError("node '" + node_.name + "' (" + node_.op_type + "): " + what);
}

int InferContext::axis(int64_t a, int rank) const {
  int64_t r = a < 0 ? a + rank : a;
  if (r < 0 || r >= std::max(rank, 1) || (rank == 0 && a != 0 && a != -1))
    fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(r);
}

bool OpSchema::is_value_input(int i) const {
  return std::find(value_inputs.begin(), value_inputs.end(), i) != value_inputs.end();
}
bool OpSchema::is_shape_only_input(int i) const {
  return std::find(shape_only_inputs.begin(), shape_only_inputs.end(), i) != shape_only_inputs.end();
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* reg = [] {
    auto* r = new OpRegistry();
    register_all_builtin_ops(*r);
    return r;
  }();
  return *reg;
}

void OpRegistry::add(OpSchema schema) {
  if (find(schema.name)) throw GafError("op '" + schema.name + "' is registered twice");
  ops_.push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(const std::string& op_type) const {
  for (const OpSchema& s : ops_)
    if (s.name == op_type) return &s;
  return nullptr;
}

const OpSchema& OpRegistry::get(const Node& node) const {
  const OpSchema* s = find(node.op_type);
  if (!s) throw GafError("node '" + node.name + "': unsupported op type '" + node.op_type + "'");
  return *s;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> n;
  for (const OpSchema& s : ops_) n.push_back(s.name);
  std::sort(n.begin(), n.end());
  return n;
}

std::vector<TensorDesc> infer_node(const OpSchema& schema, const Node& node,
                                   const std::vector<const TensorDesc*>& types,
                                   const std::vector<const Tensor*>& values) {
  InferContext ctx(node, types, values);
  int nin = static_cast<int>(node.inputs.size());
  int nout = static_cast<int>(node.outputs.size());
  ctx.check(nin >= schema.min_inputs && nin <= schema.max_inputs, "takes " + std::to_string(schema.min_inputs) + ".." +
                                                                      std::to_string(schema.max_inputs) +
                                                                      " inputs, got " + std::to_string(nin));
  ctx.check(nout >= schema.min_outputs && nout <= schema.max_outputs, "has " + std::to_string(schema.min_outputs) +
                                                                          ".." + std::to_string(schema.max_outputs) +
                                                                          " outputs, got " + std::to_string(nout));
  std::vector<TensorDesc> out;
  try {
    out = schema.infer(ctx);
  } catch (const GafError&) {
    throw;
  } catch (const std::exception& e) {
    // A standard-library error on hostile attributes (a bad index, a huge size) is still one
    // line naming the node, not an abort.
    ctx.fail(std::string("shape inference failed: ") + e.what());
  }
  ctx.check(static_cast<int>(out.size()) >= nout, "shape inference produced too few outputs");
  out.resize(nout);
  return out;
}

bool is_collective(const Node& node) {
  const OpSchema* s = OpRegistry::global().find(node.op_type);
  return s && s->op_class == OpClass::Comm;
}

int index_axis(const OpSchema::IndexInput& ii, const Node& node, int data_rank) {
  int64_t axis = node.attrs.get_int(ii.axis_attr, 0);
  if (axis < 0) axis += data_rank;
  return axis < 0 || axis >= data_rank ? -1 : static_cast<int>(axis);
}

void check_node_inputs(const OpSchema& schema, const Node& node, const std::vector<const Tensor*>& inputs) {
  if (!schema.index_input) return;
  const OpSchema::IndexInput& ii = *schema.index_input;
  const Tensor* data = static_cast<size_t>(ii.data) < inputs.size() ? inputs[ii.data] : nullptr;
  const Tensor* ind = static_cast<size_t>(ii.indices) < inputs.size() ? inputs[ii.indices] : nullptr;
  if (!data || !ind) return;
  const int axis = index_axis(ii, node, data->rank());
  if (axis < 0) return;  // shape inference reports it
  const std::string bad =
      index_out_of_range(ind->dtype(), ind->raw(), ind->numel(), data->shape()[axis], axis, node.inputs[ii.indices]);
  if (!bad.empty()) throw GafError("node '" + node.name + "' (" + node.op_type + "): " + bad);
}

void infer_shapes(Graph& g, const AfterNodeHook& after_node) {
  const OpRegistry& reg = OpRegistry::global();
  for (int idx : g.topological_order()) {
    const Node& n = g.nodes()[idx];
    const OpSchema& schema = reg.get(n);
    std::vector<TensorDesc> descs(n.inputs.size());
    std::vector<const TensorDesc*> types(n.inputs.size(), nullptr);
    std::vector<const Tensor*> values(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      const Value& v = g.value(n.inputs[i]);
      if (!v.type.is_static())
        throw GafError("node '" + n.name + "' (" + n.op_type + "): input '" + v.name + "' has non-static shape " +
                       v.type.str() + " (bind its symbols, e.g. --dim NAME=VALUE)");
      descs[i] = TensorDesc{v.type.dtype, v.type.shape()};
      types[i] = &descs[i];
      if (v.constant) values[i] = &*v.constant;
    }
    std::vector<TensorDesc> out = infer_node(schema, n, types, values);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      // Every value's size fits in int64 from here on, and each alone fits the memory budget:
      // a model that could never run is refused before anything runs.
      const std::string what = "node '" + n.name + "' (" + n.op_type + "): output '" + n.outputs[k] + "'";
      try {
        byte_size(out[k].dtype, out[k].shape);
      } catch (const GafError& e) {
        throw GafError(what + ": " + e.what());
      }
      check_memory_budget(byte_size(out[k].dtype, out[k].shape),
                          what + " " + dtype_name(out[k].dtype) + shape_str(out[k].shape));
      if (!g.has_value(n.outputs[k])) g.add_value(n.outputs[k], TensorType(out[k].dtype, out[k].shape));
      Value& v = g.value(n.outputs[k]);
      // Keep symbol names the importer recorded when they agree with the inferred extent.
      TensorType t(out[k].dtype, out[k].shape);
      if (v.type.rank_known && v.type.dims.size() == t.dims.size())
        for (size_t d = 0; d < t.dims.size(); ++d) t.dims[d].symbol = v.type.dims[d].symbol;
      v.type = t;
      v.producer = idx;
    }
    if (after_node) after_node(g, idx, types, values);
  }
}

}  // namespace gaf
