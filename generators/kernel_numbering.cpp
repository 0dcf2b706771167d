#include "generators/kernel_numbering.h"

#include <map>

namespace gaf {

std::string kernel_key(const Graph& g, const FusionGroup& grp, const ShapeClass& c) {
  std::string key = c.kernel_key(grp.signature);
  for (const auto* names : {&grp.inputs, &grp.outputs})
    for (size_t k = 0; k < names->size(); ++k)
      if (!(*names)[k].empty() && g.value((*names)[k]).block_window.defined())
        key += (names == &grp.inputs ? "|win_in" : "|win_out") + std::to_string(k);
  return key;
}

KernelNumbering number_kernels(const Graph& g, const FusionPlan& plan) {
  KernelNumbering n;
  n.classes = shape_classes(g.dynamic);
  std::map<std::string, size_t> by_key;
  for (size_t c = 0; c < n.classes.size(); ++c) {
    n.of_class_group.emplace_back();
    for (size_t s = 0; s < plan.groups.size(); ++s) {
      std::string key = kernel_key(g, plan.groups[s], n.classes[c]);
      auto [it, fresh] = by_key.emplace(key, n.kernels.size());
      if (fresh) n.kernels.push_back(KernelNumbering::Kernel{std::move(key), s, c});
      n.of_class_group.back().push_back(it->second);
    }
  }
  return n;
}

}  // namespace gaf
