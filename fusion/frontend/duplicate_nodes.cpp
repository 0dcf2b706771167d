#include "fusion/frontend/duplicate_nodes.h"

#include <map>
#include <set>

#include "fusion/ops/registry.h"

namespace gaf {

namespace {

// Constants up to this many elements are keyed by their contents (a shape, a scalar fill value,
// an axes list: exporters write one per layer); larger ones by name.
constexpr int64_t kContentKeyElements = 1024;

std::string input_key(const Graph& g, const std::string& name) {
  if (name.empty()) return "-";
  const Value& v = g.value(name);
  // A deferred weight is keyed by name: planning reads no weight (it is made when a kernel first
  // reads it), and a model's own weights are distinct anyway.
  if (!v.constant || !v.sym_contents.empty() || !v.constant->materialized() ||
      v.constant->numel() > kContentKeyElements)
    return "v:" + name;
  const Tensor& t = *v.constant;
  std::string k = "c:" + std::string(dtype_name(t.dtype())) + shape_str(t.shape()) + ":";
  const auto* bytes = static_cast<const unsigned char*>(t.raw());
  k.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(t.numel() * dtype_size(t.dtype())));
  return k;
}

bool mergeable(const Graph& g, const Node& n, const std::set<std::string>& graph_outputs) {
  const OpSchema& s = OpRegistry::global().get(n);
  if (!s.foldable || s.op_class == OpClass::Comm || n.outputs.empty()) return false;
  for (const std::string& o : n.outputs) {
    if (o.empty()) continue;
    if (graph_outputs.count(o) || g.value(o).block_window.defined()) return false;
  }
  return true;
}

}  // namespace

int merge_duplicate_nodes(Graph& g) {
  const std::set<std::string> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::map<std::string, std::string> renamed;  // a duplicate's output -> the first node's
  std::map<std::string, size_t> first;         // key -> node index
  const std::vector<int> order = g.topological_order();
  std::vector<Node>& nodes = g.nodes();
  int merged = 0;
  for (int i : order) {
    Node& n = nodes[static_cast<size_t>(i)];
    for (std::string& in : n.inputs)
      if (auto r = renamed.find(in); r != renamed.end()) in = r->second;
    if (!mergeable(g, n, graph_outputs)) continue;
    std::string key = n.op_type + "|" + n.attrs.fingerprint() + "|" + std::to_string(n.outputs.size());
    for (const std::string& in : n.inputs) key += "|" + input_key(g, in);
    auto [it, inserted] = first.emplace(key, static_cast<size_t>(i));
    if (inserted) continue;
    const Node& keep = nodes[it->second];
    bool same = true;  // every output the duplicate has, the first has too
    for (size_t o = 0; o < n.outputs.size(); ++o) same = same && (n.outputs[o].empty() || !keep.outputs[o].empty());
    if (!same) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (!n.outputs[o].empty()) renamed[n.outputs[o]] = keep.outputs[o];
    ++merged;
  }
  return merged;
}

}  // namespace gaf
