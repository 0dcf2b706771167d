// gaf::Engine: the one way in. A model (path.onnx, builtin:NAME, or a Graph already built) is
// loaded (dims bound, folded), planned (the rules' rewrites, then grouping), compiled (MatMul
// weights packed for the host tiles, one kernel per distinct group signature) and run into
// caller-owned outputs. Each step runs the ones before it when they have not run yet, so a caller
// asks for what it needs: plan() for reports, compile() or run() to execute, compile_aot() for a
// static library. No Halide here.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/model_source.h"
#include "fusion/planner/planner.h"
#include "fusion/planner/tensor_parallel.h"
#include "generators/aot_compiler.h"
#include "generators/executable.h"
#include "generators/kv_cache.h"
#include "generators/precision.h"
#include "runtime/communicator.h"
#include "runtime/npu_target.h"
#include "schedules/schedule_db.h"

namespace gaf {

struct EngineOptions {
  ModelOptions model;     // --dim bindings; builtin:bert-base's layers, seq, batch
  PlannerOptions fusion;  // fusion controls (enabled = false: every op alone)
  RuleRegistry rules = RuleRegistry::builtin();
  const ScheduleDb* schedules = nullptr;  // gaf-tune's tuned parameters, when given
  int threads = 0;                        // Halide's thread pool; 0: HL_NUM_THREADS or one per core
  std::optional<NpuTarget> npu;           // the target: the host, or the NPU tile model
  // Host: MatMul weights rewritten as panels before kernels compile (generators/weight_packing.h).
  // Off for runs that must see the weights as the reference does (gaf verify).
  bool pack_weights = true;
  // Host: MatMuls on packed weights in bf16 or int8 (generators/precision.h); needs pack_weights.
  // A low precision runs only where it is faster: on a CPU without its dot products (bf16:
  // AVX512-BF16, int8: AVX512-VNNI) the engine runs fp32 and says why (precision_note()), unless
  // lowp_where_slower (the low-precision paths' tests, gaf verify).
  Precision precision = Precision::Fp32;
  bool lowp_where_slower = false;
  // Keep the graph as loaded, before the planner's rewrites, beside the planned one (a reference
  // run or an unfused baseline of the same model); else the rewrites replace its weights in place.
  bool keep_loaded = false;
  // Tensor parallelism (fusion/planner/tensor_parallel.h): with tp.size > 1 the graph is sharded
  // at load for tp.rank. Running needs `comm` (its size and rank then set tp); planning and
  // reports do not (they show rank tp.rank's plan).
  TensorParallel tp;
  std::shared_ptr<Communicator> comm;
  // KV caches the runtime owns (generators/kv_cache.h): each present output kept in a block of
  // `capacity` rows, appended in place when its past input is fed back.
  std::vector<KvCacheBinding> kv_caches;
};

// Sets Halide's thread pool size (HL_NUM_THREADS) if `threads` > 0; it must run before the first
// JIT use (loading already runs kernels to fold constants). GafError when negative.
void set_halide_threads(int threads);

class Engine {
 public:
  // Loads "path.onnx" or "builtin:NAME"; symbols not bound by opts.model are bound from the
  // shapes of `known_inputs`. GafError naming the model on a bad file, op or binding.
  Engine(const std::string& model, EngineOptions opts, const TensorMap& known_inputs = {});
  // A graph built in code (static and typed: after prepare_graph, or made so by the builder).
  Engine(Graph g, EngineOptions opts, const std::string& description = "graph");
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const FusionPlan& plan();
  // The graph kernels are compiled from: planned, and packed when pack_weights (host).
  const Graph& kernel_graph();
  // The plan's kernels built and ready to run (`runner`); `progress` is called as each group's
  // kernel is ready (the first call compiles; later ones return it).
  Executable& compile(const CompileProgress& progress = {});
  // Runs into `outputs`, kept by the caller across runs: after the first run, a run writes into
  // the same tensors and allocates no tensor memory (PlanRunner::run). Inputs are checked against
  // the graph first (names, dtypes, shapes, dims); an input with a default (an initializer) may
  // be left out. One run at a time per engine.
  void run(const TensorMap& inputs, TensorMap& outputs);
  TensorMap run(const TensorMap& inputs);
  // Compiles the plan ahead of time (generators/aot_compiler.h) with this engine's schedules and
  // target; `aot.schedules` and `aot.npu` are filled in from the options. Before or after
  // compile(): the AOT compiler packs the weights for its own target, and after compile() (the
  // weights packed in place for this machine) it compiles for this machine only.
  AotResult compile_aot(AotOptions aot);
  // Replaces EngineOptions::kv_caches before anything compiled (bindings read off the loaded
  // graph: generators/kv_cache.h decoder_kv_caches); GafError after.
  void set_kv_caches(std::vector<KvCacheBinding> caches);

  const std::string& description() const { return loaded_.description; }
  const PassStats& passes() const { return loaded_.passes; }
  // What the tensor-parallel rewrite did at load (empty without --tp).
  const ShardResult& sharding() const { return shard_; }
  // The options as the engine runs them (precision: what runs on this CPU, see EngineOptions).
  const EngineOptions& options() const { return opts_; }
  // Non-empty when the precision asked for is not the one that runs here: why, in one line.
  const std::string& precision_note() const { return precision_note_; }
  bool fusion_enabled() const { return opts_.fusion.enabled; }
  // The graph the plan indexes (after the planner's rewrites); before plan(), as loaded.
  const Graph& graph() const { return graph_; }
  // The graph as loaded (keep_loaded), for the reference run of the model; GafError otherwise.
  const Graph& loaded_graph() const;
  // Moves the loaded graph out (keep_loaded), e.g. into an engine of its own for a baseline.
  Graph take_loaded_graph();
  // The executor that folded constants at load: the reference run of the model (gaf verify).
  ReferenceExecutor& reference() { return *reference_; }

 private:
  void after_load();
  // The KV caches bound on the kernel graph (bind_kv_caches), once.
  const std::map<std::string, KvCacheBinding>& kv_bindings();

  EngineOptions opts_;
  std::unique_ptr<ReferenceExecutor> reference_;
  LoadedModel loaded_;  // its graph: kept only with keep_loaded
  Graph graph_;
  std::optional<FusionPlan> plan_;
  bool packed_ = false;
  ShardResult shard_;
  std::unique_ptr<Executable> executable_;
  std::vector<std::string> defaults_;  // graph inputs with a default value (an initializer)
  std::optional<std::map<std::string, KvCacheBinding>> kv_bindings_;
  Precision requested_precision_ = Precision::Fp32;  // --precision as given
  std::string precision_note_;
};

}  // namespace gaf
