#include "fusion/frontend/if_branches.h"

#include <onnx/onnx_pb.h>

#include <set>

#include "fusion/ir/graph.h"

namespace gaf {

namespace {

const onnx::GraphProto* branch_of(const onnx::NodeProto& n, bool condition) {
  const char* want = condition ? "then_branch" : "else_branch";
  for (const auto& a : n.attribute())
    if (a.name() == want && a.has_g()) return &a.g();
  return nullptr;
}

// Appends `nodes` to `out`, each bound If replaced by its branch (recursively).
void append_inlined(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                    const BranchConditions& conditions, const std::string& what,
                    google::protobuf::RepeatedPtrField<onnx::NodeProto>& out, onnx::GraphProto& top) {
  for (const onnx::NodeProto& n : nodes) {
    auto bound = n.op_type() == "If" && n.input_size() == 1 ? conditions.find(n.input(0)) : conditions.end();
    if (bound == conditions.end()) {
      *out.Add() = n;
      continue;
    }
    const onnx::GraphProto* branch = branch_of(n, bound->second);
    const std::string node = what + ": node '" + n.name() + "' (If)";
    if (!branch) throw GafError(node + ": has no " + (bound->second ? "then_branch" : "else_branch") + " graph");
    if (branch->output_size() != n.output_size())
      throw GafError(node + ": its " + (bound->second ? "then" : "else") + " branch has " +
                     std::to_string(branch->output_size()) + " outputs, the If " + std::to_string(n.output_size()));
    for (const auto& init : branch->initializer()) *top.add_initializer() = init;
    append_inlined(branch->node(), conditions, what, out, top);
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty() || n.output(i) == branch->output(i).name()) continue;
      onnx::NodeProto* id = out.Add();
      id->set_op_type("Identity");
      id->set_name(n.name() + "/" + n.output(i));
      id->add_input(branch->output(i).name());
      id->add_output(n.output(i));
    }
  }
}

}  // namespace

std::vector<std::string> branch_condition_inputs(const onnx::GraphProto& g) {
  std::set<std::string> conditions;
  for (const auto& n : g.node())
    if (n.op_type() == "If" && n.input_size() == 1) conditions.insert(n.input(0));
  std::vector<std::string> found;
  for (const auto& in : g.input())
    if (conditions.count(in.name())) found.push_back(in.name());
  return found;
}

void inline_bound_branches(onnx::GraphProto& g, const BranchConditions& conditions, const std::string& what) {
  if (conditions.empty()) return;
  for (const auto& [name, value] : conditions) {
    bool is_bool_input = false;
    for (const auto& in : g.input())
      if (in.name() == name)
        is_bool_input = in.type().has_tensor_type() && in.type().tensor_type().elem_type() == onnx::TensorProto::BOOL;
    if (!is_bool_input) throw GafError(what + ": --branch '" + name + "': the model has no bool input of that name");
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  append_inlined(g.node(), conditions, what, nodes, g);
  g.mutable_node()->Swap(&nodes);
  std::set<std::string> read;
  for (const auto& n : g.node())
    for (const std::string& in : n.input()) read.insert(in);
  for (const auto& o : g.output()) read.insert(o.name());
  auto* inputs = g.mutable_input();
  for (int i = inputs->size() - 1; i >= 0; --i)
    if (conditions.count(inputs->Get(i).name()) && !read.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
}

}  // namespace gaf
