// Which groups of a plan share a kernel, numbered once: build_executable (generators/executable.h),
// the one builder behind gaf run and gaf compile, builds kernels.size() kernels in this order, so
// kernel i is the function NAME_k<i> on every path. No Halide here.
#pragma once

#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/plan.h"
#include "generators/shape_classes.h"

namespace gaf {

// What tells group `grp`'s kernel for class `c` from every other: the group's signature, the
// class, and which arguments are KV-cache windows (their kernels take strides and origins at run
// time, unlike a dense twin's).
std::string kernel_key(const Graph& g, const FusionGroup& grp, const ShapeClass& c);

struct KernelNumbering {
  struct Kernel {
    std::string key;
    size_t group = 0;        // the first group (plan index) that uses it: the one it is compiled from
    size_t shape_class = 0;  // index into `classes`
  };
  std::vector<ShapeClass> classes;                  // shape_classes(g.dynamic): one (static) without dynamic dims
  std::vector<Kernel> kernels;                      // distinct keys, class by class, in plan order within a class
  std::vector<std::vector<size_t>> of_class_group;  // [class][group]: index into `kernels`

  size_t kernel_of(size_t shape_class, size_t group) const { return of_class_group.at(shape_class).at(group); }
  // Whether class `c`'s kernel of group `s` is compiled from that group (else it reuses one).
  bool first_use(size_t c, size_t s) const {
    const Kernel& k = kernels[kernel_of(c, s)];
    return k.group == s && k.shape_class == c;
  }
};

KernelNumbering number_kernels(const Graph& g, const FusionPlan& plan);

}  // namespace gaf
