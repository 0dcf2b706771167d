#include "generators/custom_algorithm.h"

#include <map>
#include <mutex>

namespace gaf {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, GenerateFn>& registry() {
  static std::map<std::string, GenerateFn> r;
  return r;
}

}  // namespace

void set_custom_algorithm(const std::string& rule, GenerateFn fn) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (fn)
    registry()[rule] = std::move(fn);
  else
    registry().erase(rule);
}

GenerateFn find_custom_algorithm(const FusionGroup& grp) {
  if (grp.kind != FusionKind::Custom || grp.grown) return {};  // a generate step computes its match only
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(grp.rule);
  return it == registry().end() ? GenerateFn() : it->second;
}

std::vector<TensorFunc> run_custom_algorithm(const GenerateFn& fn, const std::vector<TensorFunc>& inputs,
                                             const Graph& g, const FusionGroup& grp) {
  std::vector<TensorFunc> outs = fn(inputs, g, grp);
  const std::string rule = "custom rule '" + grp.rule + "'";
  auto node_of = [&](const std::string& value) {
    int p = g.value(value).producer;
    return p < 0 ? std::string("?") : g.nodes()[p].name;
  };
  if (outs.size() != grp.outputs.size())
    throw GafError(rule + ": the generate step returned " + std::to_string(outs.size()) +
                   " outputs for the group ending at node '" + g.nodes()[grp.nodes.back()].name + "', which has " +
                   std::to_string(grp.outputs.size()));
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorFunc& t = outs[k];
    const TensorType& want = g.value(grp.outputs[k]).type;
    std::string where = rule + ": generate step output " + std::to_string(k) + " for node '" + node_of(grp.outputs[k]) +
                        "' ('" + grp.outputs[k] + "') ";
    if (!t.defined()) throw GafError(where + "is an undefined Func");
    if (t.dtype != want.dtype)
      throw GafError(where + "has dtype " + dtype_name(t.dtype) + ", the graph says " + dtype_name(want.dtype));
    if (t.shape != want.shape())
      throw GafError(where + "has shape " + shape_str(t.shape) + ", the graph says " + shape_str(want.shape()));
    if (t.func.dimensions() != t.rank())
      throw GafError(where + "is a Func of " + std::to_string(t.func.dimensions()) +
                     " dimensions for a tensor of rank " + std::to_string(t.rank()));
    if (t.func.output_types().size() != 1 || t.func.output_types()[0] != halide_type(t.dtype))
      throw GafError(where + "is a Func whose element type is not " + dtype_name(t.dtype));
  }
  return outs;
}

TensorFunc define_tensor(const std::string& name, DType dtype, const Shape& shape,
                         const std::function<Halide::Expr(const std::vector<Halide::Var>&)>& body) {
  std::vector<Halide::Var> v;
  for (size_t i = 0; i < shape.size(); ++i) v.emplace_back(name + "_d" + std::to_string(i));
  TensorFunc t{Halide::Func(name), dtype, shape};
  t.func(halide_args(v)) = Halide::cast(halide_type(dtype), body(v));
  return t;
}

}  // namespace gaf
