#include "generators/group_verifier.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "generators/value_store.h"

namespace gaf {

namespace {

// Floats mapped to integers that are ordered like the floats: adjacent floats differ by 1.
int64_t ordered_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i;
}

}  // namespace

TensorError compare_tensors(const std::string& value, const Tensor& got, const Tensor& want, const Tolerance& tol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    throw GafError("'" + value + "': fused result is " + dtype_name(got.dtype()) + shape_str(got.shape()) +
                   ", reference is " + dtype_name(want.dtype()) + shape_str(want.shape()));
  TensorError e;
  e.value = value;
  e.elements = got.numel();
  bool is_float = got.dtype() == DType::Float32;
  if (is_float) e.max_ulps = 0;
  double diff2 = 0, want2 = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.as_double(i), b = want.as_double(i);
    if (std::isfinite(a) && std::isfinite(b)) diff2 += (a - b) * (a - b), want2 += b * b;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same) {
        ++e.outside;
        e.max_abs = e.max_rel = INFINITY;
      }
      continue;
    }
    double d = std::fabs(a - b);
    e.max_abs = std::max(e.max_abs, d);
    if (d > tol.atol + tol.rtol * std::fabs(b)) ++e.outside;
    if (std::fabs(b) <= tol.atol) continue;  // near zero, relative error and ULPs say little
    e.max_rel = std::max(e.max_rel, d / std::fabs(b));
    if (is_float)
      e.max_ulps = std::max(e.max_ulps, static_cast<int64_t>(std::llabs(ordered_bits(got.data<float>()[i]) -
                                                                        ordered_bits(want.data<float>()[i]))));
  }
  e.rel_l2 = want2 > 0 ? std::sqrt(diff2 / want2) : 0;
  return e;
}

TensorError worse_of(const TensorError& a, const TensorError& b) {
  bool b_worse = b.outside != a.outside ? b.outside > a.outside : b.max_abs > a.max_abs;
  TensorError w = b_worse ? b : a;
  w.elements = a.elements + b.elements;
  w.outside = a.outside + b.outside;
  w.max_abs = std::max(a.max_abs, b.max_abs);
  w.max_rel = std::max(a.max_rel, b.max_rel);
  w.rel_l2 = std::max(a.rel_l2, b.rel_l2);
  w.max_ulps = std::max(a.max_ulps, b.max_ulps);
  return w;
}

namespace {

// The kernel's outputs (those not zero-sized: AotGroup::kernel_outputs) in the group's outputs'
// order, with an empty tensor of its type for each zero-sized one.
std::vector<Tensor> group_outputs(const Graph& g, const FusionGroup& grp, std::vector<Tensor> computed) {
  std::vector<Tensor> outs;
  size_t k = 0;
  for (const std::string& o : grp.outputs) {
    if (o.empty()) {
      outs.emplace_back();
      continue;
    }
    const TensorType& t = g.value(o).type;
    if (shape_numel(t.shape()) > 0)
      outs.push_back(std::move(computed.at(k++)));
    else
      outs.push_back(Tensor::uninitialized(t.dtype, t.shape()));
  }
  return outs;
}

}  // namespace

std::vector<GroupCheck> verify_groups(const Graph& g, const FusionPlan& plan, PlanRunner& fused, ReferenceExecutor& ref,
                                      const TensorMap& inputs, const Tolerance& tol, const VerifyProgress& progress,
                                      const Graph* kernel_graph) {
  check_graph_inputs(g, inputs);
  std::vector<std::vector<std::string>> reads;
  for (const FusionGroup& grp : plan.groups) reads.push_back(grp.inputs);
  ValueStore store(g, inputs, reads);  // the reference's values at group boundaries
  std::vector<GroupCheck> checks;
  for (size_t s = 0; s < plan.groups.size(); ++s) {
    const FusionGroup& grp = plan.groups[s];
    // The reference: the group's members op by op, values inside the group kept locally.
    std::map<std::string, Tensor> local;
    auto lookup = [&](const std::string& v) -> const Tensor* {
      if (v.empty()) return nullptr;
      auto it = local.find(v);
      return it != local.end() ? &it->second : store.get(v);
    };
    for (int n : grp.nodes) {
      const Node& node = g.nodes()[n];
      std::vector<const Tensor*> ins;
      for (const std::string& in : node.inputs) ins.push_back(lookup(in));
      std::vector<Tensor> outs = ref.run_node(node, ins);
      for (size_t k = 0; k < outs.size() && k < node.outputs.size(); ++k)
        if (!node.outputs[k].empty()) local[node.outputs[k]] = std::move(outs[k]);
    }
    std::vector<const Tensor*> group_ins;
    for (const std::string& in : grp.inputs) {
      const Value* packed = kernel_graph ? &kernel_graph->value(in) : nullptr;
      const Value& plain = g.value(in);
      const bool use_packed =
          packed && packed->constant && plain.constant && packed->constant->shape() != plain.constant->shape();
      group_ins.push_back(use_packed ? &*packed->constant : store.get(in));
    }
    std::vector<Tensor> got = group_outputs(g, grp, fused.run_group(s, group_ins));
    GroupCheck c;
    c.group = grp.id;
    std::vector<Tensor> want;
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      const Tensor& w = local.at(grp.outputs[k]);
      TensorError e = compare_tensors(grp.outputs[k], got[k], w, tol);
      c.error = k == 0 ? e : worse_of(c.error, e);
      want.push_back(w);
    }
    checks.push_back(c);
    store.finish_step(s, grp.outputs, want, grp.inputs);
    if (progress) progress(s + 1, grp);
  }
  return checks;
}

}  // namespace gaf
