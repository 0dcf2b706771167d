// The op registry: per op its schema (arity, which inputs must be known constants), its op class,
// its shape inference and its algorithm (a Halide Func builder, see op_builder.h). This header does
// not include Halide so that the planner, the frontend and the CLI stay cheap to compile.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace gaf {

// The kind of computation an op is, which is all the planner needs to know about it (cf. TVM's
// pattern kinds): elementwise (same-shape map), broadcast (map with numpy broadcasting),
// injective (layout/indexing: each output element reads one input element), reduction, matmul,
// comm (collective communication), opaque (no fusion).
enum class OpClass { Elementwise, Broadcast, Injective, Reduction, MatMul, Comm, Opaque };
const char* op_class_name(OpClass c);

struct TensorDesc {
  DType dtype = DType::Float32;
  Shape shape;
};

// What shape inference and the builder see of a node: its attributes, its inputs' types and, for
// the inputs the schema lists in `value_inputs`, their contents.
class InferContext {
 public:
  InferContext(const Node& node, std::vector<const TensorDesc*> in_types, std::vector<const Tensor*> in_values);

  const Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs; }
  int num_inputs() const { return static_cast<int>(types_.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && types_[i] != nullptr; }
  const TensorDesc& input(int i) const;
  const Shape& shape(int i) const { return input(i).shape; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  DType dtype(int i) const { return input(i).dtype; }
  // Contents of a value input (declared in the schema); throws a clear error if it is unknown.
  const Tensor& value(int i) const;
  bool has_value(int i) const { return i < num_inputs() && values_[i] != nullptr; }

  // Helpers that throw GafError naming the node.
  [[noreturn]] void fail(const std::string& what) const;
  void check(bool cond, const std::string& what) const {
    if (!cond) fail(what);
  }
  // Normalises a possibly negative axis against `rank`, checking the range.
  int axis(int64_t a, int rank) const;

 private:
  const Node& node_;
  std::vector<const TensorDesc*> types_;
  std::vector<const Tensor*> values_;
};

class BuildContext;  // op_builder.h

struct OpSchema {
  std::string name;
  OpClass op_class = OpClass::Opaque;
  int min_inputs = 1, max_inputs = 1;
  int min_outputs = 1, max_outputs = 1;
  // Inputs whose contents shape inference or the algorithm needs at compile time (a Reshape's
  // target shape, a Slice's starts...). They must be constants when planning.
  std::vector<int> value_inputs;
  // Inputs of which only the shape is read (Shape's input): no data is passed for them.
  std::vector<int> shape_only_inputs;
  // Ops whose result depends on a random state are never constant-folded.
  bool foldable = true;
  std::function<std::vector<TensorDesc>(const InferContext&)> infer;
  std::function<void(BuildContext&)> build;
  // Optional: an input of indices into another input along an axis (Gather's), which every
  // executor checks before the node runs (runtime/index_range.h): the algorithm clamps.
  struct IndexInput {
    int indices = 1;                 // the input holding the indices
    int data = 0;                    // the input they index
    std::string axis_attr = "axis";  // the attribute naming the axis (default 0, negative from the end)
  };
  std::optional<IndexInput> index_input;
  // How a split of the op's data along one axis runs through it (tensor parallelism's column
  // split, fusion/planner/tensor_parallel.cpp): by the op's own rule, or, for Elementwise and
  // Broadcast ops (ByClass), as its operands broadcast. Stop: a region cannot cross it.
  enum class SplitRule {
    ByClass,
    Stop,       // parameters along a channel axis (BatchNormalization, QuantizeLinear, ...), or unknown
    MatMul,     // column-parallel, or row-parallel where it contracts over the split
    Concat,     // along the split or beside it
    Transpose,  // the split moves with its axis
    Reshape,    // Reshape, Flatten, Squeeze, Unsqueeze: the split's axis found in the new shape
    Expand,
    Split,
    Slice,
    Gather,
    Softmax,  // Softmax, LogSoftmax: along any other axis
    Reduce,   // ReduceMean/Sum/Max over other axes
    LayerNorm,
  };
  SplitRule split_rule = SplitRule::ByClass;

  bool is_value_input(int i) const;
  bool is_shape_only_input(int i) const;
};

class OpRegistry {
 public:
  // The registry with every built-in op (registered on first use).
  static OpRegistry& global();

  void add(OpSchema schema);
  const OpSchema* find(const std::string& op_type) const;
  const OpSchema& get(const Node& node) const;  // throws naming the node if unknown
  std::vector<std::string> names() const;

 private:
  std::vector<OpSchema> ops_;
};

// The axis of `node`'s data input its indices index (schema.index_input; normalised; -1 when out of range).
int index_axis(const OpSchema::IndexInput& ii, const Node& node, int data_rank);
// Whether `node` is a collective across ranks (op class Comm: AllReduce, AllGather).
bool is_collective(const Node& node);
// Checks the op's index input (schema.index_input) if it has one: GafError naming the node.
void check_node_inputs(const OpSchema& schema, const Node& node, const std::vector<const Tensor*>& inputs);

// Checks arity against the schema, builds the InferContext and runs shape inference.
// `values[i]` may be null unless input i is a value input.
std::vector<TensorDesc> infer_node(const OpSchema& schema, const Node& node,
                                   const std::vector<const TensorDesc*>& types,
                                   const std::vector<const Tensor*>& values);

// Runs shape inference over a whole graph in topological order (all symbols must be bound),
// filling every value's type. Throws GafError naming the first node whose inference fails.
// `after_node` (optional) runs after each node's outputs are typed, with the input types and
// constant contents inference saw (constant folding uses it so that a folded value feeds the
// inference of the nodes after it).
using AfterNodeHook = std::function<void(Graph&, int node_index, const std::vector<const TensorDesc*>& types,
                                         const std::vector<const Tensor*>& constants)>;
void infer_shapes(Graph& g, const AfterNodeHook& after_node = {});

}  // namespace gaf
