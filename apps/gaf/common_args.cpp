#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <thread>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "apps/gaf/logging.h"
#include "apps/gaf/parallel_job.h"
#include "engine/rule_plugin.h"
#include "runtime/memory_budget.h"
#include "runtime/tensor_io.h"

namespace gaf::cli {

void ModelArgs::add_to(CLI::App* app, bool required) {
  app->add_option("model", model, "path/to/model.onnx or builtin:bert-base")->required(required);
  app->add_option("--dim", dims,
                  "bind a symbolic dim, NAME=VALUE, or keep it dynamic over a range, NAME=LO..HI (repeatable)");
  app->add_option("--branch", branches,
                  "take one branch of an If on a bool input, NAME=true|false (a merged decoder's use_cache_branch)");
  app->add_option("--last-row-output", last_row_outputs,
                  "a graph output of which only the last position is read (a decoder prefill's logits): where it is "
                  "a MatMul by a weight (+ bias), that MatMul runs on the last row only (repeatable; -v says where)");
  app->add_option("--layers", opts.layers, "builtin:bert-base: encoder layers")->capture_default_str();
  app->add_option("--seq", opts.seq, "builtin:bert-base: sequence length")->capture_default_str();
  app->add_option("--batch", opts.batch, "builtin:bert-base: batch size")->capture_default_str();
}

ModelOptions ModelArgs::resolved() const {
  ModelOptions o = opts;
  for (const std::string& d : dims) {
    DimBinding b = parse_dim_binding(d);
    if (o.dims.count(b.name) || o.dim_ranges.count(b.name)) throw GafError("--dim '" + b.name + "' is given twice");
    if (b.range.lo == b.range.hi)
      o.dims[b.name] = b.range.lo;
    else
      o.dim_ranges[b.name] = b.range;
  }
  for (const std::string& b : branches) {
    const size_t eq = b.find('=');
    const std::string value = eq == std::string::npos ? "" : b.substr(eq + 1);
    if (eq == 0 || (value != "true" && value != "false"))
      throw GafError("--branch '" + b + "': expected NAME=true or NAME=false, e.g. --branch use_cache_branch=true");
    if (!o.branches.emplace(b.substr(0, eq), value == "true").second)
      throw GafError("--branch '" + b.substr(0, eq) + "' is given twice");
  }
  o.last_row_outputs.insert(last_row_outputs.begin(), last_row_outputs.end());
  return o;
}

void CommonArgs::add_to(CLI::App* app) {
  app->add_flag("-v,--verbose", verbose, "more log output on stderr (-v info, -vv debug: every planner decision)");
  app->add_flag("-q,--quiet", quiet, "errors only on stderr");
  app->add_option("--threads", threads, "threads of Halide's thread pool (default: one per core)");
  app->add_option("--precision", precision,
                  "MatMul precision on the host: fp32, bf16 (weights packed to bfloat16, float32 sums) or int8 "
                  "(weights per column and activations per row quantized, int32 sums)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}))
      ->capture_default_str();
  app->add_option("--max-memory", max_memory,
                  "memory budget for tensors, e.g. 8G or 512M (default: the machine's RAM)");
  app->add_option("--tp", tp, "tensor-parallel ranks: shard the model Megatron-style; run under mpirun -np TP")
      ->capture_default_str();
  app->add_option("--comm-timeout", comm_timeout, "seconds a collective waits for the other ranks before failing")
      ->capture_default_str();
}

namespace {
// More threads than this only thrash (and 100000 exhaust the process's thread limit).
int max_threads() { return std::max(256, 4 * static_cast<int>(std::thread::hardware_concurrency())); }
}  // namespace

void CommonArgs::apply() const {
  configure_logging(verbose, quiet);
  if (threads > max_threads())
    throw GafError("--threads " + std::to_string(threads) + " is more than " + std::to_string(max_threads()));
  if (!max_memory.empty()) set_memory_budget(parse_byte_count(max_memory, "--max-memory"));
  set_halide_threads(threads);  // nothing has been JIT-compiled or run yet at this point
  if (threads > 0) spdlog::info("threads: Halide thread pool of {}", threads);
}

int process_threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

void FusionArgs::add_to(CLI::App* app) {
  app->add_flag("--no-fusion", no_fusion, "every op its own group");
  app->add_option("--disable-kind", disable_kinds, "disable a fusion kind (repeatable)");
  app->add_option("--rules", rule_plugins,
                  "load fusion rules from a plugin library (repeatable; docs/CUSTOM_RULES.md)");
  app->add_option("--disable-rule", disable_rules, "disable a rule by name (repeatable)");
  app->add_option("--skip", skip, "never fuse this node (name or op type; repeatable)");
  app->add_option("--max-group-size", max_group_size, "nodes per fused group (default 64)");
}

PlannerOptions FusionArgs::resolved(const RuleRegistry& rules) const {
  PlannerOptions o;
  if (const char* env = std::getenv("GAF_FUSION")) {
    try {
      o.apply_controls(env, rules);
    } catch (const GafError& e) {
      throw GafError(std::string("GAF_FUSION: ") + e.what());
    }
  }
  std::string spec;
  if (no_fusion) spec += "no-fusion;";
  for (const std::string& k : disable_kinds) spec += "disable-kind=" + k + ";";
  for (const std::string& r : disable_rules) spec += "disable-rule=" + r + ";";
  for (const std::string& s : skip) spec += "skip=" + s + ";";
  if (max_group_size) spec += "max-size=" + std::to_string(max_group_size) + ";";
  o.apply_controls(spec, rules);
  return o;
}

EngineOptions engine_options(const ModelArgs& model, const FusionArgs& fusion, const CommonArgs& common) {
  EngineOptions o;
  o.model = model.resolved();
  // Before the controls are resolved (--disable-rule may name a plugin's rule) and before the
  // model loads (a plugin may register its own ops).
  for (const std::string& p : fusion.rule_plugins) load_rule_plugin(p, o.rules);
  o.fusion = fusion.resolved(o.rules);
  o.threads = common.threads;
  o.precision = parse_precision(common.precision);
  o.tp.size = common.tp;
  o.comm = join_parallel_job(common.tp, common.comm_timeout);
  return o;
}

namespace {
// NaN or Inf in an input propagate to every output they reach; legal, but rarely intended.
void warn_non_finite(const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::Float32) return;
  int64_t nan = 0, inf = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    nan += std::isnan(v);
    inf += std::isinf(v);
  }
  if (nan || inf) spdlog::warn("{}: {} NaN and {} Inf values of {}", what, nan, inf, t.numel());
}
}  // namespace

TensorMap read_input_files(const std::vector<std::string>& specs) {
  TensorMap inputs;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw GafError("--input '" + spec + "': expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    if (inputs.count(name)) throw GafError("--input '" + name + "' is given twice");
    const std::string file = spec.substr(eq + 1);
    inputs[name] = read_tensor_file(file);
    warn_non_finite(inputs[name], "--input '" + name + "' (" + file + ")");
  }
  return inputs;
}

}  // namespace gaf::cli
