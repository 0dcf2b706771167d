#include "generators/aot_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fusion/report/report.h"
#include "generators/comm_kernel.h"
#include "generators/executable.h"
#include "generators/fp16_guard.h"
#include "generators/group_pipeline.h"
#include "generators/weight_packing.h"
#include "runtime/aot_plan.h"
#include "runtime/plan_runner.h"
#include "schedules/host_target.h"

namespace gaf {

namespace fs = std::filesystem;

void check_library_name(const std::string& name) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw GafError("library name '" + name + "' is not a C identifier (letters, digits, '_')");
}

namespace {

// The temporary folder the outputs are written to; removed unless committed.
class StagingDir {
 public:
  StagingDir(const fs::path& out, const std::string& name)
      : out_(out), dir_(out / ("." + name + ".tmp." + std::to_string(::getpid()))) {
    std::error_code ec;
    fs::create_directories(out_, ec);
    if (ec || !fs::is_directory(out_)) throw GafError("output folder '" + out_.string() + "' cannot be created");
    fs::remove_all(dir_, ec);
    if (!fs::create_directory(dir_, ec) || ec) throw GafError("output folder '" + out_.string() + "' is not writable");
  }
  ~StagingDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path path(const std::string& file) const { return dir_ / file; }
  // Moves the listed files into the output folder (rename: atomic per file).
  std::vector<std::string> commit(const std::vector<std::string>& files) {
    for (const std::string& f : files)  // the likely failure, checked before anything moves
      if (fs::is_directory(out_ / f)) throw GafError("cannot write '" + (out_ / f).string() + "': it is a folder");
    std::vector<std::string> done;
    for (const std::string& f : files) {
      std::error_code ec;
      fs::rename(dir_ / f, out_ / f, ec);
      if (ec) throw GafError("cannot move '" + f + "' into '" + out_.string() + "': " + ec.message());
      done.push_back((out_ / f).string());
    }
    return done;
  }

 private:
  fs::path out_, dir_;
};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw GafError("cannot write '" + p.string() + "'");
}

// One target, or several comma-separated (first preferred, last the fallback): each kernel is
// then compiled once per target with that target's schedule parameters, plus Halide's wrapper
// that picks the first one the CPU supports at run time.
std::vector<Halide::Target> aot_targets(const std::string& spec_list, bool npu) {
  std::vector<std::string> specs;
  for (size_t b = 0;;) {  // "a,,b" and "a," give empty specs, refused below
    size_t e = spec_list.find(',', b);
    specs.push_back(spec_list.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  std::vector<Halide::Target> targets;
  for (const std::string& spec : specs) {
    Halide::Target t = host_target();
    if (!spec_list.empty() && spec != "host") {
      if (spec.empty() || !Halide::Target::validate_target_string(spec))
        throw GafError("--halide-target '" + spec + "' is not a Halide target string");
      t = Halide::Target(spec);
    }
    t = t.without_feature(Halide::Target::JIT).with_feature(Halide::Target::NoRuntime);
    if (t.arch != Halide::Target::X86 || t.os != Halide::Target::Linux || t.bits != 64)
      throw GafError("--halide-target '" + spec + "': only x86-64 Linux host targets are supported");
    targets.push_back(t);
  }
  if (npu && targets.size() > 1)
    throw GafError("--halide-target: an npu-tile library is compiled for one host target, not several");
  return targets;
}

// The AOT backend: each distinct kernel an object in the staging folder (with several targets, one
// that dispatches), with its header prototypes and the CPU features its dot products need.
class ObjectKernels : public KernelBackend {
 public:
  ObjectKernels(const std::vector<Halide::Target>& targets, const StagingDir& stage, size_t dynamic_dims)
      : targets_(targets), stage_(stage), dynamic_dims_(dynamic_dims) {}
  HostScheduleParams default_params() const override { return host_params_for(targets_.front()); }
  BuiltKernel build(const KernelSite& site) override;

  std::string prototypes() const { return protos_.str(); }
  const std::set<std::string>& cpu_features() const { return cpu_features_; }

 private:
  void compile_multitarget(const KernelSite& site);
  void add_prototype(const KernelSite& site, size_t computed);

  const std::vector<Halide::Target>& targets_;
  const StagingDir& stage_;
  size_t dynamic_dims_;
  std::ostringstream protos_;
  std::set<std::string> cpu_features_;  // AotPlan::cpu_features
};

// The target a kernel reading dot-product weights `w` is compiled for (one-target libraries), and
// the CPU features that then holds the library to: with_dot_products, guarded against FP16
// instructions as the JIT's kernels are (fp16_guard.h; where this CPU has FP16 the guard cannot
// tell, so the library then needs it too).
Halide::Target dot_kernel_target(GroupPipeline& q, const Halide::Target& target, DType w,
                                 std::set<std::string>& cpu_features) {
  if (w == DType::Float32 || target.has_feature(Halide::Target::AVX512_SapphireRapids)) return target;
  const Halide::Target t = fp16_safe_target(q.pipeline(), q.arguments(), with_dot_products(target));
  if (!t.has_feature(Halide::Target::AVX512_SapphireRapids)) return t;
  cpu_features.insert(w == DType::Int8 ? "avx512_vnni" : "avx512_bf16");
  if (cpu_has_avx512_fp16()) cpu_features.insert("avx512_fp16");
  return t;
}

BuiltKernel ObjectKernels::build(const KernelSite& site) {
  const Graph& gc = *site.g;
  const FusionGroup& grp = *site.grp;
  const Halide::Target& target = targets_.front();
  BuiltKernel b;
  std::unique_ptr<GroupPipeline> p;
  try {
    if (targets_.size() == 1) {
      const std::string obj = stage_.path(site.function + ".o").string();
      const DType dot = packed_dot_weights(gc, grp.nodes);
      p = lower_group_pipeline(
          gc, grp, site.options, target,
          [&](GroupPipeline& q) {
            const Halide::Target t = dot_kernel_target(q, target, dot, cpu_features_);
            q.pipeline().compile_to({{Halide::OutputFileType::object, obj}}, q.arguments(), site.function, t);
          },
          b.fallback);
    } else {
      p = std::make_unique<GroupPipeline>(gc, grp, site.options, target);
      if (p->has_pipeline()) compile_multitarget(site);
    }
  } catch (const Halide::CompileError& e) {
    throw GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                   "): Halide compile error: " + std::string(e.what()));
  }
  b.computes = p->has_pipeline();
  if (p->npu()) {
    b.npu_stages = p->npu()->stages;
    b.npu_tiles = p->npu()->tiles;
  }
  if (b.computes) add_prototype(site, p->computed().size());
  return b;
}

// Once per target with that target's schedule parameters (the tuned ones only for the first:
// they were measured on this machine), plus Halide's wrapper that picks the first target the CPU
// supports at run time.
void ObjectKernels::compile_multitarget(const KernelSite& site) {
  std::vector<std::unique_ptr<GroupPipeline>> keep;
  std::vector<std::string> suffixes;
  for (size_t t = 0; t < targets_.size(); ++t) suffixes.push_back("t" + std::to_string(t));
  auto factory = [&](const std::string& fn_name, const Halide::Target& t) {
    HostScheduleParams params = host_params_for(t);
    if (t == targets_.front() && site.tuned) params = with_tuned(params, *site.tuned);
    keep.push_back(std::make_unique<GroupPipeline>(*site.g, *site.grp, KernelOptions{params}, t));
    return keep.back()->pipeline().compile_to_module(keep.back()->arguments(), fn_name, t);
  };
  Halide::compile_multitarget(site.function,
                              {{Halide::OutputFileType::object, stage_.path(site.function + ".o").string()}}, targets_,
                              suffixes, factory);
}

void ObjectKernels::add_prototype(const KernelSite& site, size_t computed) {
  const FusionGroup& grp = *site.grp;
  const std::string& fn = site.function;
  protos_ << "int " << fn << "(";
  for (size_t a = 0; a < grp.inputs.size(); ++a) protos_ << (a ? ", " : "") << "struct halide_buffer_t*";
  for (size_t d = 0; d < dynamic_dims_; ++d) protos_ << ", int32_t";
  for (size_t a = 0; a < computed; ++a) protos_ << ", struct halide_buffer_t*";
  protos_ << ");  // g" << grp.id << " " << fusion_kind_name(grp.kind) << ": " << grp.inputs.size() << " inputs, "
          << dynamic_dims_ << " dims, " << computed << " outputs" << (dynamic_dims_ == 0 ? "" : ", " + site.cls->str())
          << "\n";
  protos_ << "int " << fn << "_argv(void** args);\n";
}

// The Halide runtime once (for several targets, the fallback's: it must run on every CPU the
// library does), then every object of the staging folder into NAME.a.
void link_library(const std::vector<Halide::Target>& targets, const StagingDir& stage, const std::string& name) {
  std::string rt = stage.path(name + "_halide_runtime.o").string();
  Halide::compile_standalone_runtime({{Halide::OutputFileType::object, rt}},
                                     targets.back().without_feature(Halide::Target::NoRuntime));
  std::vector<std::string> objects;
  for (const auto& e : fs::directory_iterator(stage.path("")))
    if (e.path().extension() == ".o") objects.push_back(e.path().string());
  std::sort(objects.begin(), objects.end());
  Halide::create_static_library(objects, targets.front(), stage.path(name + ".a").string());
}

// The header: prototypes, the kernel table, and the table's hash (the plan carries the same).
std::string header_text(const AotPlan& plan, const std::string& prototypes, int kernels) {
  const std::string& name = plan.name;
  std::ostringstream h;
  h << "// Generated by gaf compile (graph-autofusion) from " << plan.model << " for " << plan.halide_target << ".\n// "
    << plan.groups.size() << " groups, " << kernels << " kernels. Plan: " << plan.name
    << ".plan.json, weights: " << plan.weights_file << ".\n"
    << "// Every kernel takes its group's inputs (halide_buffer_t*), the model's dynamic dims (int32_t, if\n"
    << "// any), then its outputs (halide_buffer_t*).\n"
    << "#pragma once\n\n#include <HalideRuntime.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << prototypes << "\n"
    << kAotKernelTypes << "\n"
    << "static const gaf_aot_kernel " << name << "_kernels[] = {\n";
  for (const AotKernel& k : plan.kernels)
    if (!k.function.empty()) h << "    {\"" << k.function << "\", " << k.function << "_argv},\n";
  h << "    {0, 0}};\n\n"
    << "// The plan's kernels and argument shapes these functions were compiled for (PlanRunner\n"
    << "// refuses a plan file that does not match).\n"
    << "static const gaf_aot_library " << name << "_library = {" << name << "_kernels, \""
    << plan.kernel_table_hash_recorded << "\"};\n"
    << "\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n";
  return h.str();
}

void write_weights_file(const Graph& g, const std::vector<AotWeight>& weights, const fs::path& path) {
  std::ofstream wf(path, std::ios::binary);
  int64_t off = 0;
  static const char zeros[64] = {};
  for (const AotWeight& w : weights) {
    wf.write(zeros, w.offset - off);
    wf.write(static_cast<const char*>(g.value(w.name).constant->raw()), static_cast<std::streamsize>(w.bytes));
    off = w.offset + w.bytes;
  }
  wf.flush();
  if (!wf) throw GafError("cannot write '" + path.string() + "'");
}

}  // namespace

AotResult compile_plan_aot(const Graph& loaded, const FusionPlan& plan, const AotOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  check_library_name(opts.name);
  for (const FusionGroup& grp : plan.groups)
    if (needs_communicator(loaded, grp))
      throw GafError("gaf compile: group g" + std::to_string(grp.id) +
                     " holds a collective across ranks; AOT libraries run in one process (use gaf run --tp)");
  const std::vector<Halide::Target> targets = aot_targets(opts.halide_target, opts.npu != nullptr);
  if (opts.precision != Precision::Fp32 && (targets.size() != 1 || opts.npu))
    throw GafError(std::string("gaf compile --precision ") + precision_name(opts.precision) +
                   ": compiles for one host target (not several, not npu-tile)");
  // The kernels and the weights file see MatMul weights packed for this target's tiles (one
  // target only: several targets' tile widths differ). The copy shares the other weights.
  Graph g = loaded;
  if (targets.size() == 1)
    pack_matmul_weights(g, host_params_for(targets.front()), opts.precision, opts.precision == Precision::Int8);

  AotResult res;
  res.groups = static_cast<int>(plan.groups.size());
  for (const Halide::Target& t : targets)
    res.target += (res.target.empty() ? "" : ",") + t.without_feature(Halide::Target::NoRuntime).to_string();
  StagingDir stage(opts.out_dir, opts.name);
  const std::string& name = opts.name;

  // The build gaf run does, with each kernel an object instead of JIT code.
  ObjectKernels objects(targets, stage, g.dynamic.size());
  ExecutableOptions eo;
  eo.schedules = opts.schedules;
  eo.npu = opts.npu;
  eo.kv_caches = opts.kv_caches;
  eo.backend = &objects;
  eo.model = opts.model;
  Executable built = build_executable(g, plan, name, eo);
  AotPlan& p = built.plan;
  res.kernels = static_cast<int>(p.kernels.size());
  res.schedule_fallbacks = built.stats.schedule_fallbacks;
  for (size_t i = 0; i < p.kernels.size(); ++i)  // as tuned groups are counted: at the first size class
    res.tuned_kernels += p.kernels[i].tuned && built.numbering.kernels[i].shape_class == 0;
  link_library(targets, stage, name);

  res.arena_bytes = p.arena_bytes;
  res.lower_bound = p.arena_lower_bound;
  p.halide_target = res.target;
  p.weights_file = name + ".weights";
  write_weights_file(g, p.weights, stage.path(p.weights_file));
  res.weight_bytes = p.weights_bytes;
  p.cpu_features.assign(objects.cpu_features().begin(), objects.cpu_features().end());
  p.kernel_table_hash_recorded = p.kernel_table_hash();
  p.validate("the plan of " + name);  // what the runner will check, checked here first
  write_text(stage.path(name + ".h"), header_text(p, objects.prototypes(), res.kernels));
  write_text(stage.path(name + ".plan.json"), p.to_json());

  res.files = stage.commit({name + ".a", name + ".h", name + ".weights", name + ".plan.json"});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

JitKernelTable jit_kernel_table(const Graph& loaded, const FusionPlan& plan, const std::string& name,
                                const ScheduleDb* schedules) {
  // Packed as compile_plan_aot packs for one target, so the kernels match its weights file;
  // kept alive with the kernels that were built from it.
  auto packed = std::make_shared<Graph>(loaded);
  pack_matmul_weights(*packed, host_params_for(host_target()));
  ExecutableOptions eo;
  eo.schedules = schedules;
  Executable e = build_executable(*packed, plan, name, eo);
  JitKernelTable out;
  for (auto& [fn, k] : e.kernels) out.kernels[fn] = [k = std::move(k), packed](void** args) { return k(args); };
  out.table_hash = e.plan.kernel_table_hash_recorded;
  return out;
}

}  // namespace gaf
