#include "fusion/frontend/last_row.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "fusion/ops/registry.h"
#include "fusion/ops/symbolic_dims.h"

namespace gaf {

namespace {

int producer_of(const Graph& g, const std::string& value) { return g.has_value(value) ? g.value(value).producer : -1; }

bool constant_of_rank(const Graph& g, const std::string& v, int rank) {
  return g.has_value(v) && g.value(v).constant && g.value(v).constant->rank() == rank;
}

TensorType unknown_type() {
  TensorType t;
  t.rank_known = false;
  return t;
}

}  // namespace

bool slice_output_to_last_row(Graph& g, const std::string& output) {
  int mm = producer_of(g, output);
  if (mm < 0) return false;
  std::vector<std::string> retyped{output};
  if (g.nodes()[mm].op_type == "Add" && g.nodes()[mm].inputs.size() == 2) {
    const Node& add = g.nodes()[mm];
    const int bias = constant_of_rank(g, add.inputs[1], 1) ? 1 : constant_of_rank(g, add.inputs[0], 1) ? 0 : -1;
    if (bias < 0) return false;
    const std::string product = add.inputs[1 - bias];
    mm = producer_of(g, product);
    if (mm < 0) return false;
    retyped.push_back(product);
  }
  const Node& n = g.nodes()[mm];
  if (n.op_type != "MatMul" || n.inputs.size() != 2 || !constant_of_rank(g, n.inputs[1], 2)) return false;
  const std::string a = n.inputs[0];
  if (!g.has_value(a) || !g.value(a).type.rank_known || g.value(a).type.dims.size() != 3) return false;
  for (const std::string& o : g.outputs())
    for (const std::string& r : retyped)
      if (o == r && o != output) return false;  // an intermediate that is itself an output keeps its rows

  const std::string base = n.name + "/last_row";
  const std::string starts = g.fresh_name(base + "_starts"), ends = g.fresh_name(base + "_ends"),
                    axes = g.fresh_name(base + "_axes"), sliced = g.fresh_name(base);
  g.add_initializer(starts, Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{-1}));
  g.add_initializer(ends,
                    Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));
  g.add_initializer(axes, Tensor::from_values(DType::Int64, {1}, std::vector<int64_t>{-2}));
  g.add_value(sliced, unknown_type());
  g.nodes()[mm].inputs[0] = sliced;
  g.add_node(Node{base, "Slice", {}, {a, starts, ends, axes}, {sliced}});
  for (const std::string& r : retyped) g.value(r).type = unknown_type();  // inferred again below
  g.value(g.nodes()[mm].outputs[0]).type = unknown_type();
  infer_shapes(g);
  propagate_symbolic_dims(g);
  g.validate();
  return true;
}

}  // namespace gaf
