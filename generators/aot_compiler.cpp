#include "generators/aot_compiler.h"

#include "generators/comm_kernel.h"

#include "fusion/ops/symbolic_dims.h"
#include "generators/shape_classes.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fusion/ops/symbolic_dims.h"
#include "fusion/ops/registry.h"
#include "fusion/report/report.h"
#include "generators/group_kernel.h"
#include "generators/group_pipeline.h"
#include "generators/kernel_numbering.h"
#include "generators/memory_plan.h"
#include "generators/shape_classes.h"
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
    if (!fs::create_directory(dir_, ec) || ec)
      throw GafError("output folder '" + out_.string() + "' is not writable");
  }
  ~StagingDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path path(const std::string& file) const { return dir_ / file; }
  // Moves the listed files into the output folder (rename: atomic per file).
  std::vector<std::string> commit(const std::vector<std::string>& files) {
    for (const std::string& f : files)  // the likely failure, checked before anything moves
      if (fs::is_directory(out_ / f))
        throw GafError("cannot write '" + (out_ / f).string() + "': it is a folder");
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

// The distinct kernels: one object per signature (with dynamic dims, per signature and size
// class) in the staging folder (with several targets, a dispatching one), the plan's kernel
// entries, each group's function per class, and the header prototypes.
struct CompiledKernels {
  std::vector<AotKernel> kernels;
  std::vector<std::vector<std::string>> fn_of_group;  // [group][class]
  std::vector<ShapeClass> classes;
  std::vector<std::string> fallbacks;  // kernels on the reference schedule (lower_group_pipeline)
  std::string prototypes;
  int tuned = 0;
};

// Kernel i of the numbering is the function NAME_k<i>: per group, its function per class.
std::vector<std::vector<std::string>> function_names(const KernelNumbering& n, const FusionPlan& plan,
                                                     const std::string& name) {
  std::vector<std::vector<std::string>> fns(plan.groups.size());
  for (size_t c = 0; c < n.classes.size(); ++c)
    for (size_t s = 0; s < plan.groups.size(); ++s) fns[s].push_back(name + "_k" + std::to_string(n.kernel_of(c, s)));
  return fns;
}

CompiledKernels compile_kernels(const Graph& g, const FusionPlan& plan, const AotOptions& opts,
                                const std::vector<Halide::Target>& targets, const StagingDir& stage) {
  const Halide::Target& target = targets.front();
  const HostScheduleParams defaults = host_params_for(target);
  const std::string machine = opts.schedules ? host_machine_key() : "";
  CompiledKernels out;
  const KernelNumbering numbering = number_kernels(g, plan);
  out.classes = numbering.classes;
  out.fn_of_group = function_names(numbering, plan, opts.name);
  std::ostringstream protos;
  std::optional<Graph> typed;
  for (size_t i = 0; i < numbering.kernels.size(); ++i) {
    const size_t c = numbering.kernels[i].shape_class;
    const ShapeClass& cls = out.classes[c];
    if (i == 0 || c != numbering.kernels[i - 1].shape_class) typed = class_graph(g, cls);
    const Graph& gc = typed ? *typed : g;
    const FusionGroup& grp = plan.groups[numbering.kernels[i].group];
    const TunedSchedule* tuned =
        opts.schedules && !opts.npu ? opts.schedules->find(grp.signature, "host", machine) : nullptr;
    const std::string fn = opts.name + "_k" + std::to_string(i);
    try {
      const KernelOptions kopts{tuned ? with_tuned(defaults, *tuned) : defaults,
                                opts.npu ? ScheduleSource::NpuTile : ScheduleSource::Host, opts.npu};
      std::string fallback;
      std::unique_ptr<GroupPipeline> single;
      if (targets.size() == 1) {
        const std::string obj = stage.path(fn + ".o").string();
        single = lower_group_pipeline(gc, grp, kopts, target, [&](GroupPipeline& q) {
          q.pipeline().compile_to({{Halide::OutputFileType::object, obj}}, q.arguments(), fn, target);
        }, fallback);
        if (!fallback.empty()) out.fallbacks.push_back("g" + std::to_string(grp.id) + " (" + cls.str() + "): " + fallback);
      } else {
        single = std::make_unique<GroupPipeline>(gc, grp, kopts, target);
      }
      GroupPipeline& p = *single;
      if (p.has_pipeline() && targets.size() > 1) {
        std::vector<std::unique_ptr<GroupPipeline>> keep;
        std::vector<std::string> suffixes;
        for (size_t t = 0; t < targets.size(); ++t) suffixes.push_back("t" + std::to_string(t));
        auto factory = [&](const std::string& fn_name, const Halide::Target& t) {
          bool primary = t == targets.front();  // tuned parameters were measured on this machine
          HostScheduleParams params = host_params_for(t);
          if (primary && tuned) params = with_tuned(params, *tuned);
          keep.push_back(std::make_unique<GroupPipeline>(gc, grp, KernelOptions{params}, t));
          return keep.back()->pipeline().compile_to_module(keep.back()->arguments(), fn_name, t);
        };
        Halide::compile_multitarget(fn, {{Halide::OutputFileType::object, stage.path(fn + ".o").string()}},
                                    targets, suffixes, factory);
      }
      AotKernel k;
      k.function = p.has_pipeline() ? fn : "";
      k.signature = grp.signature;
      k.tuned = tuned != nullptr;
      k.first_group = grp.id;
      if (p.npu()) {  // what the plan runtime's simulator counts, and the tiles chosen
        k.has_npu = true;
        k.npu_stages = p.npu()->stages;
        k.npu_tiles = p.npu()->tiles;
      }
      out.kernels.push_back(k);
      if (p.has_pipeline()) {
        protos << "int " << fn << "(";
        for (size_t a = 0; a < grp.inputs.size(); ++a) protos << (a ? ", " : "") << "struct halide_buffer_t*";
        for (size_t d = 0; d < g.dynamic.size(); ++d) protos << ", int32_t";
        for (size_t a = 0; a < p.computed().size(); ++a) protos << ", struct halide_buffer_t*";
        protos << ");  // g" << grp.id << " " << fusion_kind_name(grp.kind) << ": " << grp.inputs.size()
               << " inputs, " << g.dynamic.size() << " dims, " << p.computed().size() << " outputs"
               << (g.dynamic.empty() ? "" : ", " + cls.str()) << "\n";
        protos << "int " << fn << "_argv(void** args);\n";
      }
    } catch (const Halide::CompileError& e) {
      throw GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                     "): Halide compile error: " + std::string(e.what()));
    }
    if (c == 0) out.tuned += tuned != nullptr;
  }
  out.prototypes = protos.str();
  return out;
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
std::string header_text(const AotPlan& plan, const CompiledKernels& ks, int kernels) {
  const std::string& name = plan.name;
  std::ostringstream h;
  h << "// Generated by gaf compile (graph-autofusion) from " << plan.model << " for " << plan.halide_target
    << ".\n// " << plan.groups.size() << " groups, " << kernels << " kernels. Plan: " << plan.name
    << ".plan.json, weights: " << plan.weights_file << ".\n"
    << "// Every kernel takes its group's inputs (halide_buffer_t*), the model's dynamic dims (int32_t, if\n"
    << "// any), then its outputs (halide_buffer_t*).\n"
    << "#pragma once\n\n#include <HalideRuntime.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << ks.prototypes << "\n" << kAotKernelTypes << "\n"
    << "static const gaf_aot_kernel " << name << "_kernels[] = {\n";
  for (const AotKernel& k : ks.kernels)
    if (!k.function.empty()) h << "    {\"" << k.function << "\", " << k.function << "_argv},\n";
  h << "    {0, 0}};\n\n"
    << "// The plan's kernels and argument shapes these functions were compiled for (PlanRunner\n"
    << "// refuses a plan file that does not match).\n"
    << "static const gaf_aot_library " << name << "_library = {" << name << "_kernels, \""
    << plan.kernel_table_hash_recorded << "\"};\n"
    << "\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n";
  return h.str();
}

// Every constant the groups read (and constant graph outputs), 64-byte aligned; `total` gets the
// file's size.
std::vector<AotWeight> weight_entries(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, int64_t& total) {
  std::set<std::string> skip(g.inputs().begin(), g.inputs().end());
  for (const ArenaSlot& s : mp.slots) skip.insert(s.value);
  std::vector<AotWeight> weights;
  int64_t off = 0;
  auto note = [&](const std::string& v) {
    if (!g.value(v).constant || !skip.insert(v).second) return;
    const Tensor& t = *g.value(v).constant;
    AotWeight e;
    e.name = v;
    e.dtype = t.dtype();
    e.shape = t.shape();
    e.offset = (off + 63) / 64 * 64;
    e.bytes = static_cast<int64_t>(t.nbytes());
    off = e.offset + e.bytes;
    weights.push_back(e);
  };
  for (const FusionGroup& grp : plan.groups)
    for (const std::string& in : grp.inputs) note(in);
  for (const std::string& o : g.outputs()) note(o);
  total = off;
  return weights;
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

// With dynamic dims: the dims' expressions, and the shape the largest over their ranges.
AotTensor aot_tensor(const Graph& g, const std::string& v) {
  const Value& val = g.value(v);
  AotTensor t{v, val.type.dtype, val.type.shape(), val.sym_dims};
  for (size_t d = 0; d < val.sym_dims.size(); ++d) t.shape[d] = max_over(val.sym_dims[d], g.dynamic);
  return t;
}

// The members of `grp` with an index input (OpSchema::index_input) whose indices and data both
// come from outside the group: the runner checks them before the kernel (which clamps).
std::vector<AotIndexCheck> index_checks(const Graph& g, const FusionGroup& grp) {
  std::vector<AotIndexCheck> checks;
  auto external = [&](const std::string& v) { return std::count(grp.inputs.begin(), grp.inputs.end(), v) > 0; };
  for (int idx : grp.nodes) {
    const Node& n = g.nodes()[idx];
    const OpSchema* schema = OpRegistry::global().find(n.op_type);
    if (!schema || !schema->index_input) continue;
    const OpSchema::IndexInput& ii = *schema->index_input;
    if (static_cast<size_t>(std::max(ii.indices, ii.data)) >= n.inputs.size()) continue;
    const std::string &indices = n.inputs[ii.indices], &data = n.inputs[ii.data];
    if (!external(indices) || !external(data)) continue;
    const int axis = index_axis(ii, n, static_cast<int>(g.value(data).type.shape().size()));
    if (axis >= 0) checks.push_back(AotIndexCheck{n.name, n.op_type, indices, data, axis});
  }
  return checks;
}

// The plan file's content: the graph's inputs and outputs, the arena, the groups in order.
AotPlan make_plan(const Graph& g, const FusionPlan& plan, const MemoryPlan& mp, const AotOptions& opts,
                  const CompiledKernels& ks) {
  AotPlan p;
  p.name = opts.name;
  p.model = opts.model;
  p.npu = opts.npu != nullptr;
  if (opts.npu) p.npu_target = *opts.npu;
  p.library = opts.name + ".a";
  p.header = opts.name + ".h";
  p.weights_file = opts.name + ".weights";
  for (const std::string& in : g.inputs()) p.inputs.push_back(aot_tensor(g, in));
  for (const std::string& o : g.outputs()) p.outputs.push_back(aot_tensor(g, o));
  for (const auto& [name, range] : g.dynamic) p.dims.push_back(AotDim{name, range});
  if (!g.dynamic.empty())
    for (const ShapeClass& c : ks.classes) p.classes.push_back(c.ranges);
  p.kernels = ks.kernels;
  p.arena_bytes = mp.arena_bytes;
  p.arena_lower_bound = mp.lower_bound;
  p.arena_alignment = MemoryPlan::kArenaAlignment;
  for (const ArenaSlot& s : mp.slots) {
    AotBuffer b;
    static_cast<AotTensor&>(b) = aot_tensor(g, s.value);
    b.offset = s.offset;
    b.bytes = s.bytes;
    b.first = s.first;
    b.last = s.last;
    p.buffers.push_back(b);
  }
  for (size_t s = 0; s < plan.groups.size(); ++s) {
    const FusionGroup& grp = plan.groups[s];
    AotGroup a;
    a.id = grp.id;
    a.kind = fusion_kind_name(grp.kind);
    a.label = group_label(g, grp);
    a.inputs = grp.inputs;
    a.outputs = grp.outputs;
    for (const std::string& o : grp.outputs)
      if (shape_numel(g.value(o).type.shape()) > 0) a.kernel_outputs.push_back(o);
    for (const std::string& fn : ks.fn_of_group[s]) a.class_kernels.push_back(a.kernel_outputs.empty() ? "" : fn);
    a.kernel = a.class_kernels.front();
    a.index_checks = index_checks(g, grp);
    p.groups.push_back(a);
  }
  return p;
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
  // The kernels and the weights file see MatMul weights packed for this target's tiles (one
  // target only: several targets' tile widths differ). The copy shares the other weights.
  Graph g = loaded;
  if (targets.size() == 1) pack_matmul_weights(g, host_params_for(targets.front()));

  AotResult res;
  res.groups = static_cast<int>(plan.groups.size());
  for (const Halide::Target& t : targets)
    res.target += (res.target.empty() ? "" : ",") + t.without_feature(Halide::Target::NoRuntime).to_string();
  StagingDir stage(opts.out_dir, opts.name);
  const std::string& name = opts.name;

  const CompiledKernels ks = compile_kernels(g, plan, opts, targets, stage);
  res.kernels = static_cast<int>(ks.kernels.size());
  res.schedule_fallbacks = ks.fallbacks;
  res.tuned_kernels = ks.tuned;
  link_library(targets, stage, name);

  const MemoryPlan mp = plan_memory(g, plan);
  res.arena_bytes = mp.arena_bytes;
  res.lower_bound = mp.lower_bound;
  AotPlan p = make_plan(g, plan, mp, opts, ks);
  p.halide_target = res.target;
  p.weights = weight_entries(g, plan, mp, p.weights_bytes);
  write_weights_file(g, p.weights, stage.path(p.weights_file));
  res.weight_bytes = p.weights_bytes;
  p.kernel_table_hash_recorded = p.kernel_table_hash();
  p.validate("the plan of " + name);  // what the runner will check, checked here first
  write_text(stage.path(name + ".h"), header_text(p, ks, res.kernels));
  write_text(stage.path(name + ".plan.json"), p.to_json());

  res.files = stage.commit({name + ".a", name + ".h", name + ".weights", name + ".plan.json"});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

Executable build_executable(const Graph& g, const FusionPlan& plan, const std::string& name,
                            const ScheduleDb* schedules, const std::map<std::string, KvCacheBinding>& kv_caches) {
  check_library_name(name);
  const HostScheduleParams defaults = host_params_for(host_target());
  const std::string machine = schedules ? host_machine_key() : "";
  Executable out;
  std::vector<std::string> dim_names;  // the kernels' scalar arguments, in the plan's order
  for (const auto& [d, range] : g.dynamic) dim_names.push_back(d);
  const KernelNumbering numbering = number_kernels(g, plan);
  CompiledKernels ks;  // what compile_plan_aot records of its kernels, for the plan
  ks.classes = numbering.classes;
  ks.fn_of_group = function_names(numbering, plan, name);
  std::optional<Graph> typed;
  for (size_t i = 0; i < numbering.kernels.size(); ++i) {
    const size_t c = numbering.kernels[i].shape_class;
    if (i == 0 || c != numbering.kernels[i - 1].shape_class) typed = class_graph(g, ks.classes[c]);
    const Graph& gc = typed ? *typed : g;
    const FusionGroup& grp = plan.groups[numbering.kernels[i].group];
    const std::string fn = name + "_k" + std::to_string(i);
    const TunedSchedule* tuned = schedules ? schedules->find(grp.signature, "host", machine) : nullptr;
    std::shared_ptr<GroupKernel> k =
        compile_group_kernel(gc, grp, KernelOptions{tuned ? with_tuned(defaults, *tuned) : defaults});
    bool computes = false;
    for (const TensorDesc& d : k->output_descs()) computes = computes || shape_numel(d.shape) > 0;
    AotKernel entry;
    entry.function = computes ? fn : "";
    entry.signature = grp.signature;
    entry.tuned = tuned != nullptr;
    entry.first_group = grp.id;
    ks.kernels.push_back(entry);
    if (c == 0) ks.tuned += tuned != nullptr;
    if (!computes) continue;
    out.kernels[fn] = [k, n_in = grp.inputs.size(), dim_names](void** args) {
      return k->run_argv(args, n_in, dim_names);
    };
  }
  AotOptions named;
  named.name = name;
  named.model = g.name;
  const MemoryPlan mp = plan_memory(g, plan);
  out.plan = make_plan(g, plan, mp, named, ks);
  out.plan.halide_target = host_target().to_string();
  out.plan.weights_file = "";  // the weights are the graph's constants
  out.plan.weights = weight_entries(g, plan, mp, out.plan.weights_bytes);
  for (const AotWeight& w : out.plan.weights) out.weights.emplace(w.name, *g.value(w.name).constant);
  for (const auto& [present, b] : kv_caches)
    out.plan.kv_caches.push_back(AotKvCache{present, b.past, b.axis, b.capacity, b.append});
  out.plan.kernel_table_hash_recorded = out.plan.kernel_table_hash();
  return out;
}

JitKernelTable jit_kernel_table(const Graph& loaded, const FusionPlan& plan, const std::string& name,
                                const ScheduleDb* schedules) {
  // Packed as compile_plan_aot packs for one target, so the kernels match its weights file;
  // kept alive with the kernels that were built from it.
  auto packed = std::make_shared<Graph>(loaded);
  pack_matmul_weights(*packed, host_params_for(host_target()));
  Executable e = build_executable(*packed, plan, name, schedules);
  JitKernelTable out;
  for (auto& [fn, k] : e.kernels)
    out.kernels[fn] = [k = std::move(k), packed](void** args) { return k(args); };
  out.table_hash = e.plan.kernel_table_hash_recorded;
  return out;
}

}  // namespace gaf
