#include "engine/engine.h"

#include <cstdlib>

#include "generators/weight_packing.h"
#include "schedules/host_target.h"

namespace gaf {

void set_halide_threads(int threads) {
  if (threads < 0) throw GafError("--threads must be positive (or 0 for one per core)");
  // Halide's runtime sizes its thread pool from HL_NUM_THREADS when the first parallel loop runs.
  if (threads > 0) setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

Engine::Engine(const std::string& model, EngineOptions opts, const TensorMap& known_inputs)
    : opts_(std::move(opts)), reference_(std::make_unique<ReferenceExecutor>()) {
  set_halide_threads(opts_.threads);
  loaded_ = load_model(model, opts_.model, *reference_, known_inputs);
  after_load();
}

Engine::Engine(Graph g, EngineOptions opts, const std::string& description)
    : opts_(std::move(opts)), reference_(std::make_unique<ReferenceExecutor>()) {
  set_halide_threads(opts_.threads);
  loaded_.spec = loaded_.description = description;
  loaded_.graph = std::move(g);
  after_load();
}

Engine::~Engine() = default;

void Engine::after_load() {
  opts_.fusion.validate(opts_.rules);  // a bad rule name fails before any work
  opts_.fusion.check_skip_names(loaded_.graph);
  // The planner's rewrites replace weights (horizontal MatMul, BatchNormalization folding): on a
  // copy only when the loaded graph is kept, so that otherwise the replaced weights are freed.
  if (opts_.keep_loaded) graph_ = loaded_.graph;
  else graph_ = std::move(loaded_.graph);
}

const FusionPlan& Engine::plan() {
  if (!plan_) plan_ = plan_fusion_rewriting(graph_, opts_.fusion, opts_.rules);
  return *plan_;
}

const Graph& Engine::kernel_graph() {
  plan();  // signatures keep the logical shapes: plan before packing
  if (opts_.pack_weights && !opts_.npu && !packed_) {
    pack_matmul_weights(graph_, host_params_for(host_target()), opts_.precision);  // in place of the originals
    packed_ = true;
  }
  return graph_;
}

FusedExecutor& Engine::compile(const CompileProgress& progress) {
  if (!executor_) {
    const Graph& g = kernel_graph();
    executor_ = std::make_unique<FusedExecutor>(
        g, *plan_, ExecutorOptions{opts_.schedules, opts_.npu ? &*opts_.npu : nullptr, progress});
  }
  return *executor_;
}

void Engine::run(const TensorMap& inputs, TensorMap& outputs) { compile().run(inputs, outputs); }

TensorMap Engine::run(const TensorMap& inputs) { return compile().run(inputs); }

AotResult Engine::compile_aot(AotOptions aot) {
  if (packed_)
    throw GafError("internal: compile_aot after compile(): the AOT compiler packs weights for its own target");
  if (opts_.precision != Precision::Fp32)
    throw GafError(std::string("--precision ") + precision_name(opts_.precision) + " is for the JIT host path; gaf compile builds fp32 only");
  aot.schedules = opts_.schedules;
  aot.npu = opts_.npu ? &*opts_.npu : nullptr;
  return compile_plan_aot(graph_, plan(), aot);
}

const Graph& Engine::loaded_graph() const {
  if (!opts_.keep_loaded) throw GafError("internal: the loaded graph was not kept (EngineOptions::keep_loaded)");
  return loaded_.graph;
}

Graph Engine::take_loaded_graph() {
  loaded_graph();  // throws unless kept
  opts_.keep_loaded = false;
  return std::move(loaded_.graph);
}

}  // namespace gaf
