#include "engine/engine.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "generators/weight_packing.h"
#include "runtime/fnv_hash.h"
#include "schedules/host_target.h"

namespace gaf {

void set_halide_threads(int threads) {
  if (threads < 0) throw GafError("--threads must be positive (or 0 for one per core)");
  // Halide's runtime sizes its thread pool from HL_NUM_THREADS when the first parallel loop runs.
  if (threads > 0) setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

namespace {

// The ranks of a run set the tensor-parallel options; without a communicator they are the caller's.
void bind_ranks(EngineOptions& o) {
  if (!o.comm) return;
  if (o.tp.size != 1 && o.tp.size != o.comm->size())
    throw GafError("--tp " + std::to_string(o.tp.size) + " but the job has " + std::to_string(o.comm->size()) +
                   " ranks (mpirun -np)");
  o.tp = TensorParallel{o.comm->size(), o.comm->rank()};
}

// Identifies a plan across processes: the model and every group's kind and signature (weights
// are kernel inputs, so the ranks of one sharded model agree).
uint64_t plan_hash(const std::string& model, const FusionPlan& plan) {
  Fnv1a h;
  h.add(model);
  for (const FusionGroup& grp : plan.groups) {
    h.add(fusion_kind_name(grp.kind));
    h.add(grp.signature);
  }
  return h.value();
}

// The nodes of `plan`'s groups that gaf-tune's guard measured slower fused than apart on this
// machine (TunedSchedule::apart_ms), each with the sentence of its GAF-NF030 refusal.
std::map<std::string, std::string> measured_apart(const Graph& g, const FusionPlan& plan, const ScheduleDb& db) {
  std::map<std::string, std::string> apart;
  const std::string machine = host_machine_key();
  for (const FusionGroup& grp : plan.groups) {
    const TunedSchedule* t = grp.nodes.size() > 1 ? db.find(grp.signature, "host", machine) : nullptr;
    if (!t || !t->apart_ms) continue;
    char why[240];
    std::snprintf(why, sizeof why,
                  "was in a %s group that gaf-tune measured at %.3f ms fused against %.3f ms for its %zu nodes apart "
                  "(schedule database)",
                  (t->label.empty() ? grp.rule_label() : t->label).c_str(), t->best_ms, *t->apart_ms, grp.nodes.size());
    for (int n : grp.nodes) apart[g.nodes()[static_cast<size_t>(n)].name] = why;
  }
  return apart;
}

}  // namespace

Engine::Engine(const std::string& model, EngineOptions opts, const TensorMap& known_inputs)
    : opts_(std::move(opts)), reference_(std::make_unique<ReferenceExecutor>()) {
  bind_ranks(opts_);
  reference_->set_communicator(opts_.comm.get());
  set_halide_threads(opts_.threads);
  loaded_ = load_model(model, opts_.model, *reference_, known_inputs);
  after_load();
}

Engine::Engine(Graph g, EngineOptions opts, const std::string& description)
    : opts_(std::move(opts)), reference_(std::make_unique<ReferenceExecutor>()) {
  bind_ranks(opts_);
  reference_->set_communicator(opts_.comm.get());
  set_halide_threads(opts_.threads);
  loaded_.spec = loaded_.description = description;
  loaded_.graph = std::move(g);
  after_load();
}

Engine::~Engine() = default;

void Engine::after_load() {
  opts_.fusion.validate(opts_.rules);  // a bad rule name fails before any work
  // bf16 pays only with bf16 dot products: without them every kernel widens its bf16 weights and
  // BERT-base seq 128 ran 4.1x slower than fp32 (582 vs 138 ms, AMD EPYC Zen 3, AVX2).
  requested_precision_ = opts_.precision;
  if (opts_.precision == Precision::Bf16 && !opts_.npu && !opts_.lowp_where_slower && !cpu_has_avx512_bf16()) {
    opts_.precision = Precision::Fp32;
    precision_note_ =
        "--precision bf16: this CPU has no bf16 dot products (AVX512-BF16), where bf16 kernels run "
        "slower than fp32 (BERT-base 4.1x on an AVX2 AMD EPYC); running fp32 kernels, at least as accurate";
  }
  // Likewise int8 without int8 dot products (vpdpbusd): the widening multiplies alone do not pay.
  if (opts_.precision == Precision::Int8 && !opts_.npu && !opts_.lowp_where_slower && !cpu_has_avx512_vnni()) {
    opts_.precision = Precision::Fp32;
    precision_note_ =
        "--precision int8: this CPU has no AVX-512 int8 dot products (AVX512-VNNI); running fp32 "
        "kernels, at least as accurate";
  }
  opts_.fusion.check_skip_names(loaded_.graph);
  // Sharded before anything else sees the graph: each rank plans, packs and keeps only its part.
  // A graph that is sharded already (collectives imported) is not sharded again.
  shard_ = shard_tensor_parallel(loaded_.graph, opts_.tp);
  // The planner's rewrites replace weights (horizontal MatMul, BatchNormalization folding): on a
  // copy only when the loaded graph is kept, so that otherwise the replaced weights are freed.
  if (opts_.keep_loaded)
    graph_ = loaded_.graph;
  else
    graph_ = std::move(loaded_.graph);
}

const FusionPlan& Engine::plan() {
  if (!plan_) {
    plan_ = plan_fusion_rewriting(graph_, opts_.fusion, opts_.rules);
    // Groups the schedule database says lose fused on this machine: planned again with their
    // nodes apart. The graph is rewritten already, so the second pass's rewrites find nothing
    // new (their refusals are found again): the first pass's rewrites are carried over.
    std::map<std::string, std::string> apart;
    if (opts_.schedules && !opts_.npu) apart = measured_apart(graph_, *plan_, *opts_.schedules);
    if (!apart.empty()) {
      opts_.fusion.keep_apart.insert(apart.begin(), apart.end());
      FusionPlan again = plan_fusion_rewriting(graph_, opts_.fusion, opts_.rules);
      again.rewrites.insert(again.rewrites.begin(), plan_->rewrites.begin(), plan_->rewrites.end());
      again.source_nodes.insert(plan_->source_nodes.begin(), plan_->source_nodes.end());
      again.passes = plan_->passes;
      plan_ = std::move(again);
    }
    if (opts_.schedules && !opts_.npu)
      plan_->passes.push_back(PassRun{
          "guard", std::to_string(apart.size()) + " nodes planned apart (measured slower fused, schedule database)"});
    plan_->rewrites.insert(plan_->rewrites.begin(), shard_.applied.begin(), shard_.applied.end());
    plan_->refused.insert(plan_->refused.begin(), shard_.refused.begin(), shard_.refused.end());
    const PassStats& load = loaded_.passes;
    plan_->passes.insert(
        plan_->passes.begin(),
        {PassRun{"load", std::to_string(load.folded_nodes) + " nodes folded, " + std::to_string(load.removed_nodes) +
                             " removed, " + std::to_string(load.canonicalized_nodes) + " canonicalized" +
                             (load.merged_nodes ? ", " + std::to_string(load.merged_nodes) + " duplicates merged" : "")},
         PassRun{"shard", opts_.tp.size == 1 ? "off"
                                             : std::to_string(shard_.applied.size()) + " regions sharded, " +
                                                   std::to_string(shard_.refused.size()) + " left replicated, " +
                                                   std::to_string(shard_.all_reduces) + " AllReduce"}});
  }
  return *plan_;
}

const Graph& Engine::kernel_graph() {
  plan();  // signatures keep the logical shapes: plan before packing
  if (opts_.pack_weights && !opts_.npu && !packed_) {
    // in place of the originals; a model's own int8 weights stay int8 where that is faster
    const int packed =
        pack_matmul_weights(graph_, host_params_for(host_target()), opts_.precision, cpu_has_avx512_vnni());
    plan_->passes.push_back(PassRun{
        "pack", std::to_string(packed) + " MatMul weights as panels (" + precision_name(opts_.precision) + ")"});
    packed_ = true;
  }
  return graph_;
}

Executable& Engine::compile(const CompileProgress& progress) {
  if (!executable_) {
    kernel_graph();
    // Ranks that loaded different models or options are refused before anything compiles.
    if (opts_.comm && opts_.comm->size() > 1) opts_.comm->check_same(plan_hash(graph_.name, *plan_), "the plan");
    executable_ = std::make_unique<Executable>(
        build_executable(graph_, *plan_, "gaf",
                         ExecutableOptions{opts_.schedules, opts_.npu ? &*opts_.npu : nullptr, progress,
                                           opts_.comm.get(), kv_bindings()}));
    for (const std::string& in : graph_.inputs())
      if (graph_.value(in).constant) defaults_.push_back(in);
  }
  return *executable_;
}

void Engine::run(const TensorMap& inputs, TensorMap& outputs) {
  PlanRunner& runner = *compile().runner;
  check_graph_inputs(graph_, inputs);
  bool complete = true;
  for (const std::string& in : defaults_) complete = complete && inputs.count(in);
  if (complete) {
    runner.run(inputs, outputs);
  } else {  // the defaults of the inputs not given
    TensorMap given = inputs;
    for (const std::string& in : defaults_) given.emplace(in, *graph_.value(in).constant);
    runner.run(given, outputs);
  }
}

TensorMap Engine::run(const TensorMap& inputs) {
  TensorMap outputs;
  run(inputs, outputs);
  return outputs;
}

AotResult Engine::compile_aot(AotOptions aot) {
  // After compile() the weights are packed in place for this machine's tiles: a library for this
  // machine in the precision that runs here takes them as they are (packing skips packed MatMuls).
  if (packed_ && !(aot.halide_target.empty() || aot.halide_target == "host"))
    throw GafError(
        "compile_aot after compile(): the weights are packed for this machine; compile for --halide-target "
        "'" +
        aot.halide_target + "' from an engine that has not run");
  if (packed_ && requested_precision_ != opts_.precision)
    throw GafError(std::string("compile_aot after compile(): the weights are packed in ") +
                   precision_name(opts_.precision) + ", which runs on this CPU, not " +
                   precision_name(requested_precision_));
  aot.precision = requested_precision_;  // as asked: the library may run on another CPU than this
  aot.schedules = opts_.schedules;
  aot.npu = opts_.npu ? &*opts_.npu : nullptr;
  aot.kv_caches = kv_bindings();
  return compile_plan_aot(graph_, plan(), aot);
}

void Engine::set_kv_caches(std::vector<KvCacheBinding> caches) {
  if (executable_ || kv_bindings_) throw GafError("internal: KV caches set after they were bound");
  opts_.kv_caches = std::move(caches);
}

const std::map<std::string, KvCacheBinding>& Engine::kv_bindings() {
  if (!kv_bindings_) kv_bindings_ = bind_kv_caches(graph_, plan(), opts_.kv_caches);
  return *kv_bindings_;
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
