#include "runtime/plan_runner.h"

#include <HalideRuntime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

// The Halide runtime inside an AOT library defines halide_set_custom_trace; weak here, so a
// program running only JIT kernels (no AOT runtime linked) still links.
extern "C" halide_trace_t halide_set_custom_trace(halide_trace_t) __attribute__((weak));

namespace gaf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<uint8_t, AlignedFree>;

Bytes aligned_bytes(int64_t n) {
  size_t size = static_cast<size_t>((std::max<int64_t>(n, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p) throw GafError("cannot allocate " + std::to_string(size) + " bytes");
  return Bytes(static_cast<uint8_t*>(p));
}

halide_type_t halide_type_of(DType t) {
  switch (t) {
    case DType::Float32: return halide_type_t(halide_type_float, 32);
    case DType::Int64: return halide_type_t(halide_type_int, 64);
    case DType::Bool: return halide_type_t(halide_type_uint, 8);
  }
  return halide_type_t();
}

// One value's storage: where its bytes are and a halide_buffer_t describing them.
struct Slot {
  DType dtype = DType::Float32;
  Shape shape;
  enum Kind { Input, Arena, Weight } kind = Arena;
  int64_t offset = 0, bytes = 0;
  std::vector<halide_dimension_t> dims;
  halide_buffer_t buf{};
};

int32_t npu_trace(void*, const halide_trace_event_t* e) { return NpuSimulator::on_event(e); }

// Routes the AOT kernels' trace events to the NPU simulator.
void install_npu_trace() {
  if (!halide_set_custom_trace)
    throw GafError("an npu-tile plan needs its AOT library (the Halide runtime in it) linked into the program");
  halide_set_custom_trace(npu_trace);
}

}  // namespace

struct PlanRunner::Impl {
  std::string file;
  std::vector<TensorSpec> ins, outs;
  std::map<std::string, Slot> slots;
  int64_t arena_bytes = 0, lower_bound = 0, weight_bytes = 0;
  Bytes arena, weights;
  struct Step {
    std::string label;
    PlanKernel fn;
    std::vector<Slot*> args;
  };
  std::vector<Step> steps;
  bool profile = false;
  std::vector<double> ms;
  bool npu = false;
  NpuTarget npu_target;
  std::vector<NpuStageMap> npu_stages;  // per step
  std::vector<NpuCounts> npu_counts;    // per step, last run

  [[noreturn]] void fail(const std::string& what) const { throw GafError(file + ": " + what); }

  const json& field(const json& j, const char* key, const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where + ": missing field '" + key + "'");
    return j.at(key);
  }

  DType dtype_of(const json& j, const std::string& where) const {
    std::string s = field(j, "dtype", where).get<std::string>();
    for (DType t : {DType::Float32, DType::Int64, DType::Bool})
      if (s == dtype_name(t)) return t;
    fail(where + ": field 'dtype': unknown dtype '" + s + "'");
  }

  TensorSpec spec_of(const json& j, const std::string& where) const {
    TensorSpec t;
    t.name = field(j, "name", where).get<std::string>();
    t.dtype = dtype_of(j, where);
    t.shape = field(j, "shape", where + " '" + t.name + "'").get<Shape>();
    for (int64_t d : t.shape)
      if (d < 0) fail(where + " '" + t.name + "': field 'shape': negative extent");
    return t;
  }

  Slot& add_slot(const TensorSpec& t, Slot::Kind kind, int64_t offset, const std::string& where) {
    if (slots.count(t.name)) fail(where + " '" + t.name + "' is listed twice");
    Slot& s = slots[t.name];
    s.dtype = t.dtype;
    s.shape = t.shape;
    s.kind = kind;
    s.offset = offset;
    s.bytes = shape_numel(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
    int64_t stride = 1;
    for (int d = static_cast<int>(t.shape.size()) - 1; d >= 0; --d) {
      s.dims.push_back(halide_dimension_t(0, static_cast<int32_t>(t.shape[d]), static_cast<int32_t>(stride)));
      stride *= t.shape[d];
    }
    s.buf.type = halide_type_of(t.dtype);
    s.buf.dimensions = static_cast<int32_t>(s.dims.size());
    s.buf.dim = s.dims.empty() ? nullptr : s.dims.data();
    return s;
  }

  Slot& slot(const std::string& name, const std::string& where) {
    auto it = slots.find(name);
    if (it == slots.end()) fail(where + ": value '" + name + "' has no storage in the plan");
    return it->second;
  }
};

namespace {

std::map<std::string, PlanKernel> table_of(const gaf_aot_kernel* kernels) {
  std::map<std::string, PlanKernel> table;
  for (const gaf_aot_kernel* k = kernels; k && k->name; ++k) table[k->name] = k->argv;
  return table;
}

}  // namespace

PlanRunner::PlanRunner(const std::string& plan_path, const gaf_aot_kernel* kernels)
    : PlanRunner(plan_path, table_of(kernels)) {}

PlanRunner::PlanRunner(const std::string& plan_path, std::map<std::string, PlanKernel> table) : impl_(new Impl) {
  Impl& m = *impl_;
  m.file = plan_path;
  std::ifstream f(plan_path);
  if (!f) throw GafError(plan_path + ": cannot open the plan file");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    m.fail(std::string("not valid JSON: ") + e.what());
  }
  try {
    if (m.field(j, "schema", "plan") != "graph-autofusion/aot-plan/1")
      m.fail("field 'schema': expected graph-autofusion/aot-plan/1");
    for (const json& v : m.field(j, "inputs", "plan")) {
      m.ins.push_back(m.spec_of(v, "input"));
      m.add_slot(m.ins.back(), Slot::Input, 0, "input");
    }
    const json& arena = m.field(j, "arena", "plan");
    m.arena_bytes = m.field(arena, "bytes", "arena").get<int64_t>();
    m.lower_bound = m.field(arena, "lower_bound", "arena").get<int64_t>();
    for (const json& b : m.field(j, "buffers", "plan")) {
      TensorSpec t = m.spec_of(b, "buffer");
      Slot& s = m.add_slot(t, Slot::Arena, m.field(b, "offset", "buffer '" + t.name + "'").get<int64_t>(), "buffer");
      if (s.offset < 0 || s.offset % 64 || s.offset + s.bytes > m.arena_bytes)
        m.fail("buffer '" + t.name + "': field 'offset' " + std::to_string(s.offset) + " is outside the arena");
    }
    m.weight_bytes = m.field(j, "weights_bytes", "plan").get<int64_t>();
    for (const json& w : m.field(j, "weights", "plan")) {
      TensorSpec t = m.spec_of(w, "weight");
      Slot& s = m.add_slot(t, Slot::Weight, m.field(w, "offset", "weight '" + t.name + "'").get<int64_t>(), "weight");
      if (s.offset < 0 || s.offset % 64 || s.offset + s.bytes > m.weight_bytes)
        m.fail("weight '" + t.name + "': field 'offset' " + std::to_string(s.offset) + " is outside the weights file");
    }
    for (const json& v : m.field(j, "outputs", "plan")) {
      m.outs.push_back(m.spec_of(v, "output"));
      Slot& s = m.slot(m.outs.back().name, "output");
      if (s.shape != m.outs.back().shape || s.dtype != m.outs.back().dtype)
        m.fail("output '" + m.outs.back().name + "': shape or dtype differs from its buffer");
    }

    // Weights: one read of the whole file.
    fs::path wpath = fs::path(plan_path).parent_path() / m.field(j, "weights_file", "plan").get<std::string>();
    std::ifstream wf(wpath, std::ios::binary | std::ios::ate);
    if (!wf) throw GafError(wpath.string() + ": cannot open the weights file");
    int64_t size = static_cast<int64_t>(wf.tellg());
    if (size != m.weight_bytes)
      throw GafError(wpath.string() + ": " + std::to_string(size) + " bytes, the plan expects " +
                     std::to_string(m.weight_bytes));
    m.weights = aligned_bytes(size);
    wf.seekg(0);
    wf.read(reinterpret_cast<char*>(m.weights.get()), size);
    if (!wf) throw GafError(wpath.string() + ": read failed");
    m.arena = aligned_bytes(m.arena_bytes);
    for (auto& [name, s] : m.slots) {
      if (s.kind == Slot::Weight) s.buf.host = m.weights.get() + s.offset;
      if (s.kind == Slot::Arena) s.buf.host = m.arena.get() + s.offset;
    }

    // The NPU tile model: the target and each kernel's stage map (see aot_compiler.h).
    std::map<std::string, NpuStageMap> stages_of;
    m.npu = j.value("target", std::string("host")) == "npu-tile";
    if (m.npu) {
      m.npu_target = parse_npu_target(m.field(j, "npu_target", "plan").dump(), m.file + ": npu_target");
      for (const json& k : m.field(j, "kernels", "plan")) {
        std::string fn = m.field(k, "function", "kernel").get<std::string>();
        if (!fn.empty())
          stages_of[fn] = parse_npu_stage_map(m.field(k, "npu_stages", "kernel " + fn).dump(), m.file + ": kernel " + fn);
      }
      install_npu_trace();
    }

    for (const json& grp : m.field(j, "groups", "plan")) {
      std::string where = "group g" + std::to_string(m.field(grp, "id", "group").get<int>());
      std::string fn = m.field(grp, "kernel", where).get<std::string>();
      Impl::Step st;
      st.label = where + " " + m.field(grp, "kind", where).get<std::string>() + " " +
                 m.field(grp, "label", where).get<std::string>() + (fn.empty() ? "" : " (" + fn + ")");
      for (const json& in : m.field(grp, "inputs", where)) st.args.push_back(&m.slot(in.get<std::string>(), where));
      for (const json& o : m.field(grp, "kernel_outputs", where)) {
        Slot& s = m.slot(o.get<std::string>(), where);
        if (s.kind != Slot::Arena) m.fail(where + ": output '" + o.get<std::string>() + "' is not an arena buffer");
        st.args.push_back(&s);
      }
      if (!fn.empty()) {
        auto it = table.find(fn);
        if (it == table.end())
          m.fail(where + ": kernel '" + fn + "' is not in the kernel table (linked the wrong library?)");
        st.fn = it->second;
      }
      m.npu_stages.push_back(m.npu && !fn.empty() ? stages_of[fn] : NpuStageMap());
      m.steps.push_back(std::move(st));
    }
  } catch (const json::exception& e) {
    m.fail(std::string("malformed field: ") + e.what());
  }
  m.ms.assign(m.steps.size(), 0.0);
}

PlanRunner::~PlanRunner() = default;

std::map<std::string, Tensor> PlanRunner::run(const std::map<std::string, Tensor>& inputs) {
  Impl& m = *impl_;
  for (const auto& [name, t] : inputs) {
    auto it = m.slots.find(name);
    if (it == m.slots.end() || it->second.kind != Slot::Input)
      throw GafError("input '" + name + "' is not an input of the compiled model");
  }
  for (const TensorSpec& in : m.ins) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) throw GafError("input '" + in.name + "' is missing");
    const Tensor& t = it->second;
    if (t.dtype() != in.dtype)
      throw GafError("input '" + in.name + "': dtype " + dtype_name(t.dtype()) + ", the compiled model expects " +
                     dtype_name(in.dtype));
    if (t.shape() != in.shape)
      throw GafError("input '" + in.name + "': shape " + shape_str(t.shape()) + ", the compiled model expects " +
                     shape_str(in.shape));
    m.slots.at(in.name).buf.host = static_cast<uint8_t*>(const_cast<void*>(t.raw()));
  }
  std::vector<void*> argv;
  if (m.npu) m.npu_counts.assign(m.steps.size(), NpuCounts());
  for (size_t s = 0; s < m.steps.size(); ++s) {
    Impl::Step& st = m.steps[s];
    if (!st.fn) continue;
    argv.clear();
    for (Slot* a : st.args) {
      a->buf.flags = 0;
      a->buf.device = 0;
      a->buf.device_interface = nullptr;
      argv.push_back(&a->buf);
    }
    auto t0 = std::chrono::steady_clock::now();
    int rc;
    if (m.npu) {
      NpuSimulator::Session session(m.npu_stages[s], m.npu_counts[s]);
      rc = st.fn(argv.data());
    } else {
      rc = st.fn(argv.data());
    }
    if (m.profile) m.ms[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) throw GafError(st.label + ": kernel failed with Halide error " + std::to_string(rc));
  }
  std::map<std::string, Tensor> out;
  for (const TensorSpec& o : m.outs) {
    const Slot& s = m.slots.at(o.name);
    Tensor t = Tensor::uninitialized(o.dtype, o.shape);
    if (s.bytes) std::memcpy(t.raw(), s.buf.host, static_cast<size_t>(s.bytes));
    out[o.name] = t;
  }
  for (const TensorSpec& in : m.ins) m.slots.at(in.name).buf.host = nullptr;
  return out;
}

const std::vector<PlanRunner::TensorSpec>& PlanRunner::inputs() const { return impl_->ins; }
const std::vector<PlanRunner::TensorSpec>& PlanRunner::outputs() const { return impl_->outs; }
int64_t PlanRunner::arena_bytes() const { return impl_->arena_bytes; }
int64_t PlanRunner::arena_lower_bound() const { return impl_->lower_bound; }
int64_t PlanRunner::weight_bytes() const { return impl_->weight_bytes; }
size_t PlanRunner::group_count() const { return impl_->steps.size(); }
std::string PlanRunner::group_label(size_t s) const { return impl_->steps.at(s).label; }
void PlanRunner::set_profiling(bool on) { impl_->profile = on; }
const std::vector<double>& PlanRunner::group_ms() const { return impl_->ms; }
bool PlanRunner::npu() const { return impl_->npu; }
const NpuTarget& PlanRunner::npu_target() const { return impl_->npu_target; }
const std::vector<NpuCounts>& PlanRunner::npu_counts() const { return impl_->npu_counts; }

}  // namespace gaf
