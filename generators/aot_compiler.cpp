#include "generators/aot_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fusion/report/report.h"
#include "generators/group_pipeline.h"
#include "generators/memory_plan.h"
#include "generators/weight_packing.h"
#include "schedules/host_target.h"

namespace gaf {

namespace fs = std::filesystem;
using nlohmann::json;

void check_library_name(const std::string& name) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw GafError("library name '" + name + "' is not a C identifier (letters, digits, '_')");
}

namespace {

json shape_json(const Shape& s) { return json(s); }

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

}  // namespace

AotResult compile_plan_aot(const Graph& loaded, const FusionPlan& plan, const AotOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  check_library_name(opts.name);
  // One target, or several comma-separated (first preferred, last the fallback): each kernel is
  // then compiled once per target with that target's schedule parameters, plus Halide's wrapper
  // that picks the first one the CPU supports at run time.
  std::vector<Halide::Target> targets;
  std::vector<std::string> specs;
  for (size_t b = 0;;) {  // "a,,b" and "a," give empty specs, refused below
    size_t e = opts.halide_target.find(',', b);
    specs.push_back(opts.halide_target.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  for (const std::string& spec : specs) {
    Halide::Target t = host_target();
    if (!opts.halide_target.empty() && spec != "host") {
      if (spec.empty() || !Halide::Target::validate_target_string(spec))
        throw GafError("--halide-target '" + spec + "' is not a Halide target string");
      t = Halide::Target(spec);
    }
    t = t.without_feature(Halide::Target::JIT).with_feature(Halide::Target::NoRuntime);
    if (t.arch != Halide::Target::X86 || t.os != Halide::Target::Linux || t.bits != 64)
      throw GafError("--halide-target '" + spec + "': only x86-64 Linux host targets are supported");
    targets.push_back(t);
  }
  const Halide::Target& target = targets.front();
  if (opts.npu && targets.size() > 1)
    throw GafError("--halide-target: an npu-tile library is compiled for one host target, not several");
  // The kernels and the weights file see MatMul weights packed for this target's tiles (one
  // target only: several targets' tile widths differ). The copy shares the other weights.
  Graph g = loaded;
  if (targets.size() == 1) pack_matmul_weights(g, host_params_for(target));

  AotResult res;
  res.groups = static_cast<int>(plan.groups.size());
  for (const Halide::Target& t : targets)
    res.target += (res.target.empty() ? "" : ",") + t.without_feature(Halide::Target::NoRuntime).to_string();
  StagingDir stage(opts.out_dir, opts.name);
  const std::string& name = opts.name;

  // ---- kernels: one object per distinct signature ----
  const HostScheduleParams defaults = host_params_for(target);
  const std::string machine = opts.schedules ? host_machine_key() : "";
  std::map<std::string, std::string> fn_of_signature;
  std::vector<std::string> objects;
  json kernels = json::array();
  std::ostringstream protos;
  std::vector<std::string> fn_of_group;
  for (const FusionGroup& grp : plan.groups) {
    auto it = fn_of_signature.find(grp.signature);
    if (it != fn_of_signature.end()) {
      fn_of_group.push_back(it->second);
      continue;
    }
    const TunedSchedule* tuned =
        opts.schedules && !opts.npu ? opts.schedules->find(grp.signature, "host", machine) : nullptr;
    std::string fn = name + "_k" + std::to_string(res.kernels);
    try {
      GroupPipeline p(g, grp,
                      {tuned ? with_tuned(defaults, *tuned) : defaults,
                       opts.npu ? ScheduleSource::NpuTile : ScheduleSource::Host, opts.npu},
                      target);
      if (p.has_pipeline() && targets.size() == 1) {
        std::string obj = stage.path(fn + ".o").string();
        p.pipeline().compile_to({{Halide::OutputFileType::object, obj}}, p.arguments(), fn, target);
      } else if (p.has_pipeline()) {
        std::vector<std::unique_ptr<GroupPipeline>> keep;
        std::vector<std::string> suffixes;
        for (size_t i = 0; i < targets.size(); ++i) suffixes.push_back("t" + std::to_string(i));
        auto factory = [&](const std::string& fn_name, const Halide::Target& t) {
          bool primary = t == targets.front();  // tuned parameters were measured on this machine
          HostScheduleParams params = host_params_for(t);
          if (primary && tuned) params = with_tuned(params, *tuned);
          keep.push_back(std::make_unique<GroupPipeline>(g, grp, KernelOptions{params}, t));
          return keep.back()->pipeline().compile_to_module(keep.back()->arguments(), fn_name, t);
        };
        Halide::compile_multitarget(fn, {{Halide::OutputFileType::object, stage.path(fn + ".o").string()}},
                                    targets, suffixes, factory);
      }
      json k = {{"function", p.has_pipeline() ? fn : ""},
                {"signature", grp.signature},
                {"tuned", tuned != nullptr},
                {"first_group", grp.id}};
      if (p.npu()) {  // what the plan runtime's simulator counts, and the tiles chosen
        k["npu_stages"] = json::parse(npu_stage_map_json(p.npu()->stages));
        k["npu_tiles"] = p.npu()->tiles;
      }
      kernels.push_back(k);
      if (p.has_pipeline()) {
        size_t nargs = grp.inputs.size() + p.computed().size();
        protos << "int " << fn << "(";
        for (size_t a = 0; a < nargs; ++a) protos << (a ? ", " : "") << "struct halide_buffer_t*";
        protos << ");  // g" << grp.id << " " << fusion_kind_name(grp.kind) << ": " << grp.inputs.size()
               << " inputs, " << p.computed().size() << " outputs\n";
        protos << "int " << fn << "_argv(void** args);\n";
      }
    } catch (const Halide::CompileError& e) {
      throw GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                     "): Halide compile error: " + std::string(e.what()));
    }
    fn_of_signature[grp.signature] = fn;
    fn_of_group.push_back(fn);
    ++res.kernels;
    res.tuned_kernels += tuned != nullptr;
  }

  // ---- the Halide runtime once, then one static library ----
  // (for several targets, the fallback's: it must run on every CPU the library does)
  std::string rt = stage.path(name + "_halide_runtime.o").string();
  Halide::compile_standalone_runtime({{Halide::OutputFileType::object, rt}},
                                     targets.back().without_feature(Halide::Target::NoRuntime));
  for (const auto& e : fs::directory_iterator(stage.path("")))
    if (e.path().extension() == ".o") objects.push_back(e.path().string());
  std::sort(objects.begin(), objects.end());
  Halide::create_static_library(objects, target, stage.path(name + ".a").string());

  // ---- the header: prototypes and the kernel table ----
  std::ostringstream h;
  h << "// Generated by gaf compile (graph-autofusion) from " << opts.model << " for " << res.target
    << ".\n// " << plan.groups.size() << " groups, " << res.kernels << " kernels. Plan: " << name
    << ".plan.json, weights: " << name << ".weights.\n"
    << "// Every kernel takes its group's inputs then its outputs as halide_buffer_t*.\n"
    << "#pragma once\n\n#include <HalideRuntime.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << protos.str()
    << "\n#ifndef GAF_AOT_KERNEL_DEFINED\n#define GAF_AOT_KERNEL_DEFINED\n"
    << "typedef struct gaf_aot_kernel {\n  const char* name;\n  int (*argv)(void** args);\n} gaf_aot_kernel;\n"
    << "#endif\n\n"
    << "static const gaf_aot_kernel " << name << "_kernels[] = {\n";
  for (const json& k : kernels)
    if (!k["function"].get<std::string>().empty())
      h << "    {\"" << k["function"].get<std::string>() << "\", " << k["function"].get<std::string>() << "_argv},\n";
  h << "    {0, 0}};\n\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n";
  write_text(stage.path(name + ".h"), h.str());

  // ---- weights: every constant the groups read (and constant graph outputs) ----
  MemoryPlan mp = plan_memory(g, plan);
  res.arena_bytes = mp.arena_bytes;
  res.lower_bound = mp.lower_bound;
  std::map<std::string, size_t> slot_of;
  for (size_t i = 0; i < mp.slots.size(); ++i) slot_of[mp.slots[i].value] = i;
  std::set<std::string> inputs(g.inputs().begin(), g.inputs().end());
  std::vector<std::string> weight_names;
  std::set<std::string> seen;
  auto note_weight = [&](const std::string& v) {
    if (!slot_of.count(v) && !inputs.count(v) && g.value(v).constant && seen.insert(v).second)
      weight_names.push_back(v);
  };
  for (const FusionGroup& grp : plan.groups)
    for (const std::string& in : grp.inputs) note_weight(in);
  for (const std::string& o : g.outputs()) note_weight(o);
  json weights = json::array();
  {
    std::ofstream wf(stage.path(name + ".weights"), std::ios::binary);
    int64_t off = 0;
    for (const std::string& w : weight_names) {
      const Tensor& t = *g.value(w).constant;
      int64_t pad = (off + 63) / 64 * 64 - off;
      static const char zeros[64] = {};
      wf.write(zeros, pad);
      off += pad;
      wf.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
      weights.push_back({{"name", w}, {"dtype", dtype_name(t.dtype())}, {"shape", shape_json(t.shape())},
                         {"offset", off}, {"bytes", t.nbytes()}});
      off += static_cast<int64_t>(t.nbytes());
    }
    wf.flush();
    if (!wf) throw GafError("cannot write '" + stage.path(name + ".weights").string() + "'");
    res.weight_bytes = off;
  }

  // ---- the plan file ----
  auto value_json = [&](const std::string& v) {
    const Value& val = g.value(v);
    return json{{"name", v}, {"dtype", dtype_name(val.type.dtype)}, {"shape", shape_json(val.type.shape())}};
  };
  json j;
  j["schema"] = "graph-autofusion/aot-plan/1";
  j["name"] = name;
  j["model"] = opts.model;
  j["halide_target"] = res.target;
  j["target"] = opts.npu ? "npu-tile" : "host";
  if (opts.npu) j["npu_target"] = json::parse(npu_target_json(*opts.npu));
  j["library"] = name + ".a";
  j["header"] = name + ".h";
  j["weights_file"] = name + ".weights";
  j["weights_bytes"] = res.weight_bytes;
  j["inputs"] = json::array();
  for (const std::string& in : g.inputs()) j["inputs"].push_back(value_json(in));
  j["outputs"] = json::array();
  for (const std::string& o : g.outputs()) j["outputs"].push_back(value_json(o));
  j["kernels"] = kernels;
  j["arena"] = {{"bytes", mp.arena_bytes}, {"lower_bound", mp.lower_bound},
                {"alignment", MemoryPlan::kArenaAlignment}};
  json buffers = json::array();
  for (const ArenaSlot& s : mp.slots) {
    json b = value_json(s.value);
    b["offset"] = s.offset;
    b["bytes"] = s.bytes;
    b["live"] = {s.first, s.last};
    buffers.push_back(b);
  }
  j["buffers"] = buffers;
  j["weights"] = weights;
  json groups = json::array();
  for (size_t s = 0; s < plan.groups.size(); ++s) {
    const FusionGroup& grp = plan.groups[s];
    json outs = json::array(), computed = json::array();
    for (const std::string& o : grp.outputs) {
      outs.push_back(o);
      if (shape_numel(g.value(o).type.shape()) > 0) computed.push_back(o);
    }
    bool empty = computed.empty();
    groups.push_back({{"id", grp.id},
                      {"kind", fusion_kind_name(grp.kind)},
                      {"label", group_label(g, grp)},
                      {"kernel", empty ? "" : fn_of_group[s]},
                      {"inputs", grp.inputs},
                      {"outputs", outs},
                      {"kernel_outputs", computed}});
  }
  j["groups"] = groups;
  write_text(stage.path(name + ".plan.json"), j.dump(1) + "\n");

  res.files = stage.commit({name + ".a", name + ".h", name + ".weights", name + ".plan.json"});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

std::map<std::string, std::function<int(void**)>> jit_kernel_table(const Graph& loaded, const FusionPlan& plan,
                                                                   const std::string& name,
                                                                   const ScheduleDb* schedules) {
  check_library_name(name);
  const HostScheduleParams defaults = host_params_for(host_target());
  // Packed as compile_plan_aot packs for one target, so the kernels match its weights file;
  // kept alive with the kernels that were built from it.
  auto packed = std::make_shared<Graph>(loaded);
  pack_matmul_weights(*packed, defaults);
  const Graph& g = *packed;
  const std::string machine = schedules ? host_machine_key() : "";
  std::map<std::string, std::function<int(void**)>> table;
  std::set<std::string> seen;
  int count = 0;
  for (const FusionGroup& grp : plan.groups) {
    if (!seen.insert(grp.signature).second) continue;
    std::string fn = name + "_k" + std::to_string(count++);  // compile_plan_aot's numbering
    const TunedSchedule* tuned = schedules ? schedules->find(grp.signature, "host", machine) : nullptr;
    std::shared_ptr<GroupPipeline> p;
    try {
      p = std::make_shared<GroupPipeline>(g, grp, KernelOptions{tuned ? with_tuned(defaults, *tuned) : defaults},
                                          host_target());
      if (!p->has_pipeline()) continue;
      p->pipeline().compile_jit(host_target());
    } catch (const Halide::CompileError& e) {
      throw GafError("group g" + std::to_string(grp.id) + " (" + fusion_kind_name(grp.kind) +
                     "): Halide compile error: " + std::string(e.what()));
    }
    const size_t n_in = grp.inputs.size();
    table[fn] = [p, n_in, fn, packed](void** args) -> int {
      try {
        for (size_t k = 0; k < n_in; ++k)
          if (p->params()[k].defined())
            p->params()[k].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(*static_cast<halide_buffer_t*>(args[k]))));
        std::vector<Halide::Buffer<>> outs;
        for (size_t j = 0; j < p->computed().size(); ++j)
          outs.emplace_back(Halide::Runtime::Buffer<>(*static_cast<halide_buffer_t*>(args[n_in + j])));
        Halide::Realization r(outs);
        p->pipeline().realize(r, host_target());
        return 0;
      } catch (const Halide::Error& e) {
        std::cerr << fn << ": " << e.what() << "\n";
        return -1;
      }
    };
  }
  return table;
}

}  // namespace gaf
