// A C++ builder that reads like model code:
//   GraphBuilder g("mlp");
//   auto x = g.input("x", DType::Float32, {Dim::sym("batch"), 768});
//   auto y = g.matmul(x, g.weight("w", w));  y = g.add(y, g.weight("b", b));
//   g.output(g.relu(y), "y");
//   Graph graph = g.finish();
// Node names carry the current scope ("layer0/attn/MatMul_3"), like the names PyTorch exports.
// Shapes are left to shape inference (fusion/ops), so this layer needs no op knowledge.
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace gaf {

class GraphBuilder;

// A value being built: just its name (cheap to copy).
struct ValueRef {
  std::string name;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name);

  ValueRef input(const std::string& name, DType dtype, std::vector<Dim> dims);
  ValueRef weight(const std::string& name, Tensor t);
  ValueRef scalar(float v);                      // rank-0 float32 constant
  ValueRef ints(const std::vector<int64_t>& v);  // 1-D int64 constant (shapes, axes)
  void output(const ValueRef& v, const std::string& name = "");

  // Any op: returns its outputs.
  std::vector<ValueRef> op(const std::string& op_type, const std::vector<ValueRef>& inputs, Attributes attrs = {},
                           int num_outputs = 1);
  ValueRef op1(const std::string& op_type, const std::vector<ValueRef>& inputs, Attributes attrs = {});

  ValueRef add(ValueRef a, ValueRef b) { return op1("Add", {a, b}); }
  ValueRef sub(ValueRef a, ValueRef b) { return op1("Sub", {a, b}); }
  ValueRef mul(ValueRef a, ValueRef b) { return op1("Mul", {a, b}); }
  ValueRef div(ValueRef a, ValueRef b) { return op1("Div", {a, b}); }
  ValueRef pow(ValueRef a, ValueRef b) { return op1("Pow", {a, b}); }
  ValueRef sqrt(ValueRef a) { return op1("Sqrt", {a}); }
  ValueRef erf(ValueRef a) { return op1("Erf", {a}); }
  ValueRef tanh(ValueRef a) { return op1("Tanh", {a}); }
  ValueRef relu(ValueRef a) { return op1("Relu", {a}); }
  ValueRef matmul(ValueRef a, ValueRef b) { return op1("MatMul", {a, b}); }
  ValueRef reduce_mean(ValueRef a, const std::vector<int64_t>& axes, bool keepdims = true);
  ValueRef softmax(ValueRef a, int64_t axis = -1);
  ValueRef transpose(ValueRef a, const std::vector<int64_t>& perm);
  ValueRef reshape(ValueRef a, const std::vector<int64_t>& shape);
  ValueRef unsqueeze(ValueRef a, const std::vector<int64_t>& axes);

  // Scopes prefix node names; nest with push/pop or the RAII Scope.
  void push_scope(const std::string& s) { scopes_.push_back(s); }
  void pop_scope() { scopes_.pop_back(); }
  class Scope {
   public:
    Scope(GraphBuilder& b, const std::string& s) : b_(b) { b_.push_scope(s); }
    ~Scope() { b_.pop_scope(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GraphBuilder& b_;
  };

  // Validates and returns the graph (call infer_shapes next to type every value).
  Graph finish();

 private:
  std::string scoped(const std::string& base);
  Graph g_;
  std::vector<std::string> scopes_;
  int counter_ = 0;
};

}  // namespace gaf
