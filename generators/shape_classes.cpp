#include "generators/shape_classes.h"

#include "fusion/ops/symbolic_dims.h"
#include "runtime/tensor.h"

namespace gaf {

SymBindings ShapeClass::schedule_point() const {
  SymBindings b;
  for (const auto& [name, r] : ranges) b[name] = r.lo;
  return b;
}

bool ShapeClass::contains(const SymBindings& dims) const { return ranges_hold(ranges, dims); }

std::string ShapeClass::kernel_key(const std::string& signature) const {
  return ranges.empty() ? signature : signature + " @" + str();
}

std::string ShapeClass::str() const {
  std::string s;
  for (const auto& [name, r] : ranges) s += (s.empty() ? "" : ", ") + name + "=" + r.str();
  return s.empty() ? "static" : s;
}

std::vector<ShapeClass> shape_classes(const SymbolRanges& dynamic, const std::vector<int64_t>& cuts) {
  std::vector<ShapeClass> classes{ShapeClass{}};
  for (const auto& [name, r] : dynamic) {
    std::vector<SymbolRange> parts;
    int64_t lo = r.lo;
    for (int64_t c : cuts)
      if (c > lo && c <= r.hi) {
        parts.push_back({lo, c - 1});
        lo = c;
      }
    parts.push_back({lo, r.hi});
    std::vector<ShapeClass> next;
    for (const ShapeClass& k : classes)
      for (const SymbolRange& part : parts) {
        ShapeClass c = k;
        c.ranges[name] = part;
        next.push_back(c);
      }
    classes = std::move(next);
  }
  return classes;
}

std::optional<Graph> class_graph(const Graph& g, const ShapeClass& c) {
  if (g.dynamic.empty()) return std::nullopt;
  Graph typed = typed_at(g, c.schedule_point());
  typed.dynamic = c.ranges;
  return typed;
}

size_t find_shape_class(const std::vector<ShapeClass>& classes, const SymBindings& dims) {
  for (size_t i = 0; i < classes.size(); ++i)
    if (classes[i].contains(dims)) return i;
  std::string d;
  for (const auto& [name, v] : dims) d += (d.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  throw GafError("no compiled size class holds " + d);
}

}  // namespace gaf
