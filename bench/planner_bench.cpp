// planner_bench: how planning time grows with the graph (bench/README.md, "Planner scaling").
// Three graph families, each at the sizes given:
//   bert   — builtin BERT encoders with more layers (~50 nodes a layer), hidden 64 so that the
//            weights stay small: the planner's work depends on the node count, not the widths;
//   chain  — one elementwise chain (Relu, Add of a constant, alternating) of N nodes;
//   fanout — one input read by N/2 branches of two elementwise ops, summed pairwise back to one.
// Per graph: nodes, the time of prepare_graph (shape inference + folding), of the planner with
// its rewrites (plan_fusion_rewriting), groups, and the process's peak RSS so far.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fusion/frontend/passes.h"
#include "fusion/models/bert.h"
#include "fusion/models/synthetic.h"
#include "fusion/planner/planner.h"
#include "generators/reference_executor.h"
#include "runtime/process_memory.h"

using namespace gaf;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void measure(const std::string& family, int size, Graph g, const std::map<std::string, int64_t>& dims) {
  ReferenceExecutor folder;
  NodeEvaluator eval = [&folder](const Node& n, const std::vector<const Tensor*>& in,
                                 const std::vector<const TensorDesc*>& types) { return folder.run_node(n, in, types); };
  auto t0 = Clock::now();
  prepare_graph(g, dims, eval);
  const double prepare_s = seconds_since(t0);
  const size_t nodes = g.nodes().size();
  t0 = Clock::now();
  FusionPlan plan = plan_fusion_rewriting(g, PlannerOptions{}, RuleRegistry::builtin());
  const double plan_s = seconds_since(t0);
  std::printf("| %-6s | %7d | %7zu | %8.3f | %8.3f | %7zu | %8.1f |\n", family.c_str(), size, nodes, prepare_s, plan_s,
              plan.groups.size(), static_cast<double>(peak_rss_bytes()) / 1e6);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"planner_bench: planning time against graph size"};
  std::vector<int> layers{12, 50, 200}, chains{1000, 8000}, fanouts{2000};
  int64_t hidden = 64;
  app.add_option("--layers", layers, "BERT layer counts (about 50 nodes each)");
  app.add_option("--chain", chains, "elementwise chain lengths (nodes)");
  app.add_option("--fanout", fanouts, "fan-out graph sizes (nodes, about)");
  app.add_option("--hidden", hidden, "BERT hidden size (heads = hidden / 16, FFN = 4 x hidden)");
  CLI11_PARSE(app, argc, argv);
  try {
    std::printf("| graph  |    size |   nodes | prepare s |   plan s |  groups | peak RSS MB |\n");
    std::printf("|--------|---------|---------|-----------|----------|---------|-------------|\n");
    for (int l : layers) {
      BertConfig cfg;
      cfg.layers = l;
      cfg.hidden = hidden;
      cfg.heads = std::max<int64_t>(1, hidden / 16);
      cfg.ffn = 4 * hidden;
      measure("bert", l, build_bert(cfg), {{"batch", 1}, {"seq", 128}});
    }
    for (int n : chains) measure("chain", n, elementwise_chain_graph(n), {});
    for (int n : fanouts) measure("fanout", n, fanout_graph(n), {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "planner_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
