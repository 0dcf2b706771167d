// gaf compile: plan a model and compile it ahead of time: DIR/NAME.a (kernels + Halide runtime),
// DIR/NAME.h, DIR/NAME.plan.json, DIR/NAME.weights (generators/aot_compiler.h).
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "apps/gaf/commands.h"
#include "runtime/file_io.h"
#include "fusion/report/report.h"
#include "generators/aot_compiler.h"

namespace gaf::cli {

namespace {

struct CompileArgs {
  ModelArgs model;
  FusionArgs fusion;
  CommonArgs common;  // -v/-q, --threads
  std::string target = "host";
  std::string out_dir;
  std::string name;
  std::string schedules;
  std::string halide_target;
  std::string npu_target_file;
  int64_t kv_cache_capacity = 0;
  std::vector<std::string> inputs;  // NAME=FILE.npy: binds symbolic dims, as gaf run's --input does
};

// "builtin:bert-base" -> "bert_base", "models/tiny-mlp.onnx" -> "tiny_mlp".
std::string default_name(const std::string& spec) {
  std::string base = spec.rfind("builtin:", 0) == 0 ? spec.substr(8) : std::filesystem::path(spec).stem().string();
  std::string n;
  for (char c : base) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) n = "m_" + n;
  return n;
}

int compile(const CompileArgs& a) {
  a.common.apply();
  if (a.target != "host" && a.target != "npu-tile")
    throw GafError("--target '" + a.target + "': expected host or npu-tile");
  if (a.target != "npu-tile" && !a.npu_target_file.empty()) throw GafError("--npu-target needs --target npu-tile");
  std::optional<NpuTarget> npu;
  if (a.target == "npu-tile") npu = npu_target_or_default(a.npu_target_file);
  std::string name = a.name.empty() ? default_name(a.model.model) : a.name;
  check_library_name(name);
  std::unique_ptr<ScheduleDb> db;
  if (!a.schedules.empty()) db = std::make_unique<ScheduleDb>(ScheduleDb::load(a.schedules, false));
  if (!a.out_dir.empty()) prepare_output_folder(a.out_dir, "--output-dir");
  EngineOptions opts = engine_options(a.model, a.fusion, a.common);
  opts.schedules = db.get();
  opts.npu = npu;
  if (a.kv_cache_capacity < 0) throw GafError("--kv-cache-capacity must be positive");
  Engine engine(a.model.model, opts, read_input_files(a.inputs));
  // A decoder: each present.* output kept in a block the plan runner appends to in place.
  if (a.kv_cache_capacity > 0) engine.set_kv_caches(decoder_kv_caches(engine.graph(), a.kv_cache_capacity));
  std::printf("model: %s\n", engine.description().c_str());
  std::cout << fusion_log_lines(engine.graph(), engine.plan());
  AotOptions ao;
  ao.name = name;
  ao.out_dir = a.out_dir;
  ao.model = a.model.model;
  ao.halide_target = a.halide_target;
  AotResult r = engine.compile_aot(ao);
  for (const std::string& f : r.schedule_fallbacks)
    spdlog::warn("reference schedule for {} (the host schedule does not lower with dynamic dims)", f);
  std::printf("compiled: %d groups -> %d kernels (%d tuned) for %s in %.2f s\n", r.groups, r.kernels, r.tuned_kernels,
              r.target.c_str(), r.seconds);
  std::printf("memory: arena %.2f MB (lower bound %.2f MB), weights %.1f MB\n", r.arena_bytes / 1e6,
              r.lower_bound / 1e6, r.weight_bytes / 1e6);
  for (const std::string& f : r.files) std::printf("wrote %s\n", f.c_str());
  return 0;
}

}  // namespace

Action add_compile_command(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* c = app.add_subcommand("compile",
                                   "compile a model ahead of time: static library, header, plan file and weights file");
  a->model.add_to(c);
  a->fusion.add_to(c);
  a->common.add_to(c);
  c->add_option("--target", a->target,
                "host, or npu-tile: the NPU tile model's schedules, run on the host with the simulator counting "
                "their staging copies (the plan runtime reports GM bytes and modeled time)")
      ->capture_default_str();
  c->add_option("--npu-target", a->npu_target_file,
                "--target npu-tile: NPU target description (JSON); default: schedules/targets/ascend910_like.json");
  c->add_option("-o,--output-dir", a->out_dir, "folder for NAME.a, NAME.h, NAME.plan.json, NAME.weights")->required();
  c->add_option("--name", a->name, "library and function prefix, a C identifier (default: from the model)");
  c->add_option("--schedules", a->schedules, "tuned-schedule database written by gaf-tune (JSON)");
  c->add_option("--halide-target", a->halide_target,
                "Halide target (default: host = this machine's, e.g. x86-64-linux-avx512_sapphirerapids); "
                "several comma-separated = one library dispatching at run time, e.g. "
                "host,x86-64-linux-sse41-avx-f16c-fma-avx2");
  c->add_option("--input", a->inputs,
                "NAME=FILE.npy (or .pb), repeatable: the model's symbolic dims not bound by --dim take this "
                "input's extents, as in gaf run");
  c->add_option("--kv-cache-capacity", a->kv_cache_capacity,
                "a decoder: keep every present.* output in a block of this many positions, which a step "
                "(past_key_values.* inputs) appends to in place instead of copying the cache");
  return [a] { return compile(*a); };
}

}  // namespace gaf::cli
