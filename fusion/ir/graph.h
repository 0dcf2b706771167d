// The graph IR: values (tensors with a dtype and a shape whose dims may be named symbols), nodes
// (op type, attributes, inputs, outputs), graph inputs/outputs and initializers (constant values).
// Values are identified by name; an empty input name means "optional input absent" (as in ONNX).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "runtime/sym_expr.h"
#include "runtime/tensor.h"

namespace gaf {

// A dim is a known extent, a named symbol (ONNX dim_param such as "batch"), or both once the symbol
// has been bound. A dim with neither is unknown.
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor): dims read like numbers
  static Dim sym(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  bool known() const { return value >= 0; }
  std::string str() const;
};

struct TensorType {
  DType dtype = DType::Float32;
  std::vector<Dim> dims;
  bool rank_known = true;

  TensorType() = default;
  TensorType(DType t, const Shape& s);
  bool is_static() const;
  Shape shape() const;  // throws unless static
  std::string str() const;
};

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  const std::map<std::string, AttrValue>& all() const { return values_; }

  int64_t get_int(const std::string& name, int64_t dflt) const;
  float get_float(const std::string& name, float dflt) const;
  std::string get_string(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& dflt) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& dflt) const;
  const Tensor* get_tensor(const std::string& name) const;

  // Stable text form: used in kernel cache keys and dumps.
  std::string fingerprint() const;

 private:
  std::map<std::string, AttrValue> values_;
};

struct Node {
  std::string name;
  std::string op_type;
  Attributes attrs;
  std::vector<std::string> inputs;  // "" = optional input absent
  std::vector<std::string> outputs;
};

struct Value {
  std::string name;
  TensorType type;
  std::optional<Tensor> constant;  // initializers and folded constants
  int producer = -1;               // index of producing node, -1 for inputs/initializers
  // With dynamic dims (Graph::dynamic): each dim as a polynomial in the symbols; `type` holds
  // its value at the representative point (every symbol at its upper bound). Empty: static.
  SymShape sym_dims;
  // An int64 constant computed from dynamic dims (a shape a Reshape reads): one expression per
  // element; `constant` holds the contents at the representative point. Empty: the contents
  // are the same at every point.
  std::vector<SymExpr> sym_contents;
  // Bound at run time to a window of a block of `capacity` rows along `axis` (a KV cache,
  // Tensor::with_capacity): kernels use the block's strides, and a kernel writing it takes the
  // window's rows along the axis from its buffer (it may write only the rows after the past's).
  struct BlockWindow {
    int axis = -1;
    int64_t capacity = 0;
    // A present its group appends to (rows after the past's): its written rows along `axis` are
    // the buffer's; otherwise the window starts at row 0 and spans the value's extent.
    bool append = false;
    bool defined() const { return axis >= 0; }
  } block_window;

  bool is_symbolic() const { return !sym_dims.empty() || !sym_contents.empty(); }
  // The dims as expressions: sym_dims, or the static shape as constants.
  SymShape sym_shape() const;
};

class Graph {
 public:
  std::string name = "graph";
  // The dims that stay symbolic (--dim seq=1..512) and their ranges; empty: every dim static.
  SymbolRanges dynamic;

  // Values
  Value& add_value(const std::string& name, TensorType type);
  Value& add_initializer(const std::string& name, Tensor t);
  bool has_value(const std::string& name) const { return values_.count(name) != 0; }
  Value& value(const std::string& name);
  const Value& value(const std::string& name) const;
  const std::map<std::string, Value>& values() const { return values_; }
  std::map<std::string, Value>& values() { return values_; }
  bool is_constant(const std::string& name) const;
  // The value's contents when it is constant (an initializer or folded), else null (also for ""
  // and unknown names).
  const Tensor* constant(const std::string& name) const;

  // Nodes: names must be unique; an empty name gets "<op_type>_<index>".
  Node& add_node(Node n);
  const std::vector<Node>& nodes() const { return nodes_; }
  // Mutable access may rename nodes: the name index is rebuilt at its next use.
  std::vector<Node>& nodes() {
    names_stale_ = true;
    return nodes_;
  }
  // Replace the node list (e.g. after a pass removed nodes); recomputes producers.
  void set_nodes(std::vector<Node> nodes);

  std::vector<std::string>& inputs() { return inputs_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  std::vector<std::string>& outputs() { return outputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

  // Node indices in dependency order; throws GafError naming a node on a cycle.
  std::vector<int> topological_order() const;
  // Checks names, dangling references, single producers, cycles. Throws GafError naming the node.
  void validate() const;
  // Readable text form.
  std::string dump() const;
  // Name not yet used by any value (prefix + counter).
  std::string fresh_name(const std::string& prefix);
  // Renames a value everywhere it is referenced (nodes, graph inputs/outputs).
  void rename_value(const std::string& from, const std::string& to);

  // Replaces each symbolic dim by its binding; throws on a symbol absent from `bindings`
  // (keeps the symbol's name next to the value).
  void bind_dims(const std::map<std::string, int64_t>& bindings);
  std::vector<std::string> unbound_symbols() const;

 private:
  void recompute_producers();
  const std::unordered_set<std::string>& node_names();  // add_node and fresh_name: O(1) lookups
  std::map<std::string, Value> values_;
  std::vector<Node> nodes_;
  std::vector<std::string> inputs_, outputs_;
  std::map<std::string, int> fresh_counter_;
  std::unordered_set<std::string> node_names_;
  bool names_stale_ = true;
};

}  // namespace gaf
