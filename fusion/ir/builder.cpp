#include "fusion/ir/builder.h"

namespace gaf {

GraphBuilder::GraphBuilder(std::string graph_name) { g_.name = std::move(graph_name); }

std::string GraphBuilder::scoped(const std::string& base) {
  std::string s;
  for (const std::string& p : scopes_) s += p + "/";
  return s + base + "_" + std::to_string(counter_++);
}

ValueRef GraphBuilder::input(const std::string& name, DType dtype, std::vector<Dim> dims) {
  TensorType t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  g_.add_value(name, t);
  g_.inputs().push_back(name);
  return {name};
}

ValueRef GraphBuilder::weight(const std::string& name, Tensor t) {
  g_.add_initializer(name, std::move(t));
  return {name};
}

ValueRef GraphBuilder::scalar(float v) {
  return weight(scoped("const"), Tensor::from_values(DType::Float32, {}, std::vector<float>{v}));
}

ValueRef GraphBuilder::ints(const std::vector<int64_t>& v) {
  return weight(scoped("const"), Tensor::from_values(DType::Int64, {static_cast<int64_t>(v.size())}, v));
}

void GraphBuilder::output(const ValueRef& v, const std::string& name) {
  if (!name.empty() && name != v.name) g_.rename_value(v.name, name);
  g_.outputs().push_back(name.empty() ? v.name : name);
}

std::vector<ValueRef> GraphBuilder::op(const std::string& op_type, const std::vector<ValueRef>& inputs,
                                       Attributes attrs, int num_outputs) {
  Node n;
  n.name = scoped(op_type);
  n.op_type = op_type;
  n.attrs = std::move(attrs);
  for (const ValueRef& v : inputs) n.inputs.push_back(v.name);
  std::vector<ValueRef> outs;
  for (int k = 0; k < num_outputs; ++k) {
    std::string o = n.name + (num_outputs > 1 ? ":" + std::to_string(k) : "");
    TensorType unknown;
    unknown.rank_known = false;
    g_.add_value(o, unknown);
    n.outputs.push_back(o);
    outs.push_back({o});
  }
  g_.add_node(std::move(n));
  return outs;
}

ValueRef GraphBuilder::op1(const std::string& op_type, const std::vector<ValueRef>& inputs, Attributes attrs) {
  return op(op_type, inputs, std::move(attrs), 1)[0];
}

ValueRef GraphBuilder::reduce_mean(ValueRef a, const std::vector<int64_t>& axes, bool keepdims) {
  Attributes at;
  at.set("axes", axes);
  at.set("keepdims", static_cast<int64_t>(keepdims));
  return op1("ReduceMean", {a}, at);
}

ValueRef GraphBuilder::softmax(ValueRef a, int64_t axis) {
  Attributes at;
  at.set("axis", axis);
  return op1("Softmax", {a}, at);
}

ValueRef GraphBuilder::transpose(ValueRef a, const std::vector<int64_t>& perm) {
  Attributes at;
  at.set("perm", perm);
  return op1("Transpose", {a}, at);
}

ValueRef GraphBuilder::reshape(ValueRef a, const std::vector<int64_t>& shape) {
  return op1("Reshape", {a, ints(shape)});
}

ValueRef GraphBuilder::unsqueeze(ValueRef a, const std::vector<int64_t>& axes) {
  return op1("Unsqueeze", {a, ints(axes)});
}

Graph GraphBuilder::finish() {
  g_.validate();
  return g_;
}

}  // namespace gaf
