// The size classes of a graph with dynamic dims. A group's kernel is compiled once per class:
// each dynamic dim's range is cut at fixed boundaries, and a class's kernel gets the schedule its
// smallest point gets (every split of a dynamic axis then fits every point of the class, and
// small sizes, e.g. one decoded token, get tiles of their own) while its extents stay symbolic.
// At run time the class that holds the run's dims is chosen. No Halide here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "runtime/sym_expr.h"

namespace gaf {

struct ShapeClass {
  SymbolRanges ranges;  // one sub-range per dynamic dim

  // Where the class's kernel is scheduled: every dim at the low end of its sub-range.
  SymBindings schedule_point() const;
  bool contains(const SymBindings& dims) const;
  std::string str() const;  // "seq=16..127"
  // What tells this class's kernel of a group with `signature` from the other classes' (the
  // signature itself for the one class of a static graph).
  std::string kernel_key(const std::string& signature) const;
};

// Where dynamic ranges are cut: a dim's classes are [1, 1], [2, 15], [16, 127], then doubling
// ([128, 255], [256, 511], ... up to 4096) as far as they overlap its range. 1 is a class of its
// own: the builders read a dim of extent 1 at index 0 (numpy broadcasting), which is right for a
// dim that is 1 at every point of its class and wrong for one that is 1 only at the class's
// schedule point. Above 128 the sizes a schedule picks from its point (attention's row blocks)
// matter: within a doubling they stay within 2x of what the largest point would pick (BERT-base
// at seq 512 from the class [128, 512]: 1.16x the specialised time; see bench/RESULTS.md).
inline const std::vector<int64_t> kShapeClassCuts = {2, 16, 128, 256, 512, 1024, 2048, 4096};

// The classes of `dynamic` (the product of every dim's sub-ranges); one class with no ranges
// when nothing is dynamic.
std::vector<ShapeClass> shape_classes(const SymbolRanges& dynamic, const std::vector<int64_t>& cuts = kShapeClassCuts);
// The graph a class's kernels are built from: typed at the class's schedule point, with the
// class's sub-ranges as its dynamic dims (the kernels' parameters get those bounds, and a dim
// whose sub-range is one value, e.g. seq=1..1, becomes a constant: a static kernel). Nothing
// for a static graph (build from `g` itself).
std::optional<Graph> class_graph(const Graph& g, const ShapeClass& c);

// Index of the class holding `dims`; throws GafError naming the dims when none does.
size_t find_shape_class(const std::vector<ShapeClass>& classes, const SymBindings& dims);

}  // namespace gaf
