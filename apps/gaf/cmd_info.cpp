// gaf info [MODEL]: inputs, outputs, op counts and shapes of a model after import and folding,
// then what the kernels are chosen for: this CPU's facts (runtime/cpu_facts.h); alone, only those.
#include <iostream>
#include <map>

#include "apps/gaf/commands.h"
#include "fusion/ops/registry.h"
#include "runtime/cpu_facts.h"

namespace gaf::cli {

namespace {

struct InfoArgs {
  ModelArgs model;
  CommonArgs common;
  bool dump = false;
};

int info(const InfoArgs& a) {
  a.common.apply();
  if (a.model.model.empty()) {
    std::cout << "cpu:\n" << cpu_facts().report();
    return 0;
  }
  ReferenceExecutor folder;
  LoadedModel m = load_model(a.model.model, a.model.resolved(), folder);
  const Graph& g = m.graph;
  std::cout << "model: " << m.description << "\n";
  std::cout << "inputs:\n";
  for (const std::string& in : g.inputs()) std::cout << "  " << in << " : " << g.value(in).type.str() << "\n";
  std::cout << "outputs:\n";
  for (const std::string& o : g.outputs()) std::cout << "  " << o << " : " << g.value(o).type.str() << "\n";
  std::map<std::string, int> counts;
  for (const Node& n : g.nodes()) ++counts[n.op_type];
  size_t weights = 0, nweights = 0;
  for (const auto& [_, v] : g.values())
    if (v.constant) {
      weights += v.constant->nbytes();
      ++nweights;
    }
  std::cout << "nodes: " << g.nodes().size() << " (" << m.passes.folded_nodes << " folded, " << m.passes.removed_nodes
            << " removed at load)\n";
  std::cout << "ops:\n";
  const OpRegistry& reg = OpRegistry::global();
  for (const auto& [op, n] : counts)
    std::cout << "  " << op << " x" << n << "  [" << op_class_name(reg.find(op)->op_class) << "]\n";
  std::cout << "weights: " << nweights << " tensors, " << weights / 1e6 << " MB\n";
  std::cout << "cpu:\n" << cpu_facts().report();
  if (a.dump) std::cout << g.dump();
  return 0;
}

}  // namespace

Action add_info_command(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* c = app.add_subcommand(
      "info", "print a model's inputs, outputs, op counts and shapes, and this CPU's facts (alone: only those)");
  a->model.add_to(c, false);
  a->common.add_to(c);
  c->add_flag("--dump", a->dump, "also print every node with its shapes");
  return [a] { return info(*a); };
}

}  // namespace gaf::cli
