#include "runtime/plan_runner.h"

#include <HalideRuntime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "runtime/aot_plan.h"
#include "runtime/cache_window.h"
#include "runtime/cpu_facts.h"
#include "runtime/halide_view.h"
#include "runtime/index_range.h"

// The Halide runtime inside an AOT library defines these; weak here, so a program running only
// JIT kernels (no AOT runtime linked) still links.
extern "C" halide_trace_t halide_set_custom_trace(halide_trace_t) __attribute__((weak));
extern "C" halide_error_handler_t halide_set_error_handler(halide_error_handler_t) __attribute__((weak));

namespace gaf {

namespace fs = std::filesystem;

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
    case DType::Float16: return halide_type_t(halide_type_float, 16);
    case DType::BFloat16: return halide_type_t(halide_type_bfloat, 16);
    case DType::Int8: return halide_type_t(halide_type_int, 8);
    case DType::UInt8: return halide_type_t(halide_type_uint, 8);
    case DType::Int32: return halide_type_t(halide_type_int, 32);
  }
  return halide_type_t();
}

// One value's storage: where its bytes are and a halide_buffer_t describing them.
struct Slot {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<SymExpr> sym_shape;  // dynamic dims: the shape is set per run from these
  // Cache: a KV cache's present, a window of a block the caller keeps (set per run).
  enum Kind { Input, Arena, Weight, Cache } kind = Arena;
  int64_t offset = 0, bytes = 0;
  std::vector<halide_dimension_t> dims;
  halide_buffer_t buf{};
  // Cache only: what the group computing present writes (its new rows when it appends).
  std::vector<halide_dimension_t> written_dims;
  halide_buffer_t written{};
};

int32_t npu_trace(void*, const halide_trace_event_t* e) { return NpuSimulator::on_event(e); }

// Routes the AOT kernels' trace events to the NPU simulator.
void install_npu_trace() {
  if (!halide_set_custom_trace)
    throw GafError("an npu-tile plan needs its AOT library (the Halide runtime in it) linked into the program");
  halide_set_custom_trace(npu_trace);
}

// Halide's default error handler prints the message and aborts. Ours keeps the message, the
// kernel returns its error code, and run() throws it as a GafError naming the group.
std::mutex g_error_mutex;
std::string g_last_error;

void keep_halide_error(void*, const char* msg) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  g_last_error = msg;
  std::replace(g_last_error.begin(), g_last_error.end(), '\n', ' ');  // one line
  while (!g_last_error.empty() && (g_last_error.back() == '\n' || g_last_error.back() == ' ')) g_last_error.pop_back();
}

std::string take_halide_error() {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  std::string m = std::move(g_last_error);
  g_last_error.clear();
  return m;
}

void install_error_handler() {
  if (halide_set_error_handler) halide_set_error_handler(keep_halide_error);
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
    std::vector<PlanKernel> fns;  // per size class (one for a static plan); null: nothing to compute
    std::vector<Slot*> args;      // inputs then outputs
    size_t num_inputs = 0;        // the dims' scalars go between
    struct IndexCheck {
      size_t indices, data;  // argument positions (group inputs)
      DType indices_dtype;
      int axis;
      std::string node, name;  // "node 'X' (Gather)", the indices' value
    };
    std::vector<IndexCheck> index_checks;  // before the kernel runs (runtime/index_range.h)
  };
  std::vector<AotDim> dims;  // dynamic dims
  std::vector<SymbolRanges> classes;
  std::vector<int32_t> dim_values;  // the current run's, in `dims` order
  SymBindings bound;
  size_t current_class = 0;
  std::vector<Step> steps;
  bool profile = false;
  std::vector<double> ms;
  bool npu = false;
  NpuTarget npu_target;
  std::vector<NpuStageMap> npu_stages;  // per step
  std::vector<NpuCounts> npu_counts;    // per step, last run

  [[noreturn]] void fail(const std::string& what) const { throw GafError(file + ": " + what); }

  Slot& add_slot(const AotTensor& t, Slot::Kind kind, int64_t offset) {
    Slot& s = slots[t.name];
    s.dtype = t.dtype;
    s.shape = t.shape;
    s.kind = kind;
    s.offset = offset;
    s.sym_shape = t.sym_shape;
    s.buf.type = halide_type_of(t.dtype);
    set_shape(s, t.shape);
    return s;
  }

  // The slot's shape, bytes and halide_buffer_t dims (dense, row-major).
  static void set_shape(Slot& s, const Shape& shape) {
    s.shape = shape;
    s.bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(s.dtype));
    s.dims.clear();
    int64_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      s.dims.push_back(halide_dimension_t(0, static_cast<int32_t>(shape[d]), static_cast<int32_t>(stride)));
      stride *= shape[d];
    }
    s.buf.dimensions = static_cast<int32_t>(s.dims.size());
    s.buf.dim = s.dims.empty() ? nullptr : s.dims.data();
  }

  // Dynamic dims from the inputs' shapes: each dim an input has as a plain symbol binds it, then
  // every input must have the shape the dims give and every dim lie in its range.
  void bind_dims(const std::map<std::string, Tensor>& inputs) {
    bound.clear();
    for (const TensorSpec& in : ins) {
      const Slot& s = slots.at(in.name);
      const Shape& got = inputs.at(in.name).shape();
      if (got.size() != s.sym_shape.size()) continue;  // the rank check below names it
      for (size_t d = 0; d < got.size(); ++d) {
        std::optional<std::string> sym = s.sym_shape[d].as_symbol();
        if (!sym) continue;
        auto [it, fresh] = bound.emplace(*sym, got[d]);
        if (!fresh && it->second != got[d])
          throw GafError("input '" + in.name + "' dim " + std::to_string(d) + " ('" + *sym + "') is " +
                         std::to_string(got[d]) + " but '" + *sym + "' is already " + std::to_string(it->second));
      }
    }
    dim_values.clear();
    for (const AotDim& d : dims) {
      auto it = bound.find(d.name);
      if (it == bound.end()) throw GafError("no input gives dim '" + d.name + "' (" + file + ")");
      if (!d.range.contains(it->second)) {
        std::string who;
        for (const TensorSpec& in : ins) {
          const Slot& s = slots.at(in.name);
          for (size_t k = 0; k < s.sym_shape.size() && who.empty(); ++k)
            if (s.sym_shape[k].as_symbol() == d.name) who = "input '" + in.name + "' dim " + std::to_string(k) + " ";
        }
        throw GafError(who + "('" + d.name + "') is " + std::to_string(it->second) + ", outside the compiled range " +
                       d.range.str());
      }
      dim_values.push_back(static_cast<int32_t>(it->second));
    }
    current_class = classes.size();
    for (size_t c = 0; c < classes.size() && current_class == classes.size(); ++c)
      if (ranges_hold(classes[c], bound)) current_class = c;
    if (current_class == classes.size()) fail("no size class holds the run's dims");
    for (auto& [name, s] : slots)
      if (!s.sym_shape.empty()) set_shape(s, eval_shape(s.sym_shape, bound));
  }

  // aot_library: the kernels are a compiled library's (its runtime gets the NPU trace handler).
  void load(const AotPlan& plan, const std::map<std::string, PlanKernel>& table, bool aot_library);
  std::map<std::string, Tensor> weight_tensors;  // in-memory plans: the weights' storage

  struct Cache {
    AotKvCache spec;
    Slot* present;
    Slot* past;  // null: none
  };
  std::vector<Cache> caches;

  std::function<void(size_t)> group_hook;  // before each group while profiling
  size_t peak_bytes = 0;
  struct Live {
    const Slot* slot;
    size_t first, last;  // the groups it lives through
  };
  std::vector<Live> live;  // the arena's values
  std::vector<void*> argv;

  // Runs step s's kernel on `bufs` (its arguments: group inputs, then kernel outputs): the
  // index checks, the dims' scalars, the NPU session, the profile, errors naming the group.
  void invoke(size_t s, const std::vector<halide_buffer_t*>& bufs) {
    Step& st = steps[s];
    const PlanKernel& fn = st.fns.at(current_class);
    if (!fn) return;
    for (const Step::IndexCheck& c : st.index_checks) {
      const halide_buffer_t& ind = *bufs[c.indices];
      const halide_buffer_t& data = *bufs[c.data];
      int64_t count = 1;
      for (int d = 0; d < ind.dimensions; ++d) count *= ind.dim[d].extent;
      const int64_t extent = data.dim[data.dimensions - 1 - c.axis].extent;
      const std::string bad = index_out_of_range(c.indices_dtype, ind.host, count, extent, c.axis, c.name);
      if (!bad.empty()) throw GafError(c.node + ": " + bad);
    }
    argv.clear();
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (i == st.num_inputs)
        for (int32_t& d : dim_values) argv.push_back(&d);
      halide_buffer_t& b = *bufs[i];
      b.flags = 0;
      b.device = 0;
      b.device_interface = nullptr;
      argv.push_back(&b);
    }
    if (st.num_inputs == bufs.size())
      for (int32_t& d : dim_values) argv.push_back(&d);
    if (profile && group_hook) group_hook(s);
    auto t0 = std::chrono::steady_clock::now();
    int rc;
    try {
      if (npu) {
        if (npu_counts.size() != steps.size()) npu_counts.assign(steps.size(), NpuCounts());
        NpuSimulator::Session session(npu_stages[s], npu_counts[s]);
        rc = fn(argv.data());
      } else {
        rc = fn(argv.data());
      }
    } catch (const GafError& e) {  // a JIT kernel's failure, its message already taken
      throw GafError(st.label + ": " + e.what());
    }
    if (profile) ms[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::string msg = take_halide_error();
      throw GafError(st.label + ": kernel failed with Halide error " + std::to_string(rc) +
                     (msg.empty() ? "" : ": " + msg));
    }
  }

  // The most bytes of values live at once over the groups (at this run's shapes): a value from
  // the group that writes it to the last that reads it.
  size_t live_peak() const {
    std::vector<int64_t> delta(steps.size() + 1, 0);
    for (const Live& v : live) {
      delta[v.first] += v.slot->bytes;
      delta[v.last + 1] -= v.slot->bytes;
    }
    int64_t now = 0, peak = 0;
    for (int64_t d : delta) peak = std::max(peak, now += d);
    return static_cast<size_t>(peak);
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

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw GafError(path + ": cannot open the plan file");
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

PlanRunner::TensorSpec spec_of(const AotTensor& t) { return PlanRunner::TensorSpec{t.name, t.dtype, t.shape}; }

}  // namespace

// Everything but the weights' storage: slots, arena, steps with their kernels.
void PlanRunner::Impl::load(const AotPlan& plan, const std::map<std::string, PlanKernel>& table, bool aot_library) {
  Impl& m = *this;
  install_error_handler();
  // A library with dot-product kernels (gaf compile --precision bf16/int8 for AVX-512) would die
  // on the first one (SIGILL) on a CPU without the instruction: refused here in one line.
  const std::string have = " " + cpu_facts().feature_list() + " ";
  for (const std::string& f : plan.cpu_features)
    if (have.find(" " + f + " ") == std::string::npos)
      m.fail("field 'cpu_features': its kernels need " + f + ", which this CPU (" + cpu_facts().name +
             ") does not have; compile the library without --precision, or on a CPU with it");

  for (const AotTensor& t : plan.inputs) {
    m.ins.push_back(spec_of(t));
    m.add_slot(t, Slot::Input, 0);
  }
  for (const AotTensor& t : plan.outputs) m.outs.push_back(spec_of(t));
  m.arena_bytes = plan.arena_bytes;
  m.lower_bound = plan.arena_lower_bound;
  m.weight_bytes = plan.weights_bytes;
  for (const AotBuffer& b : plan.buffers) m.add_slot(b, Slot::Arena, b.offset);
  const size_t last_group = plan.groups.empty() ? 0 : plan.groups.size() - 1;
  for (const AotBuffer& b : plan.buffers)
    m.live.push_back(Impl::Live{&m.slots.at(b.name),
                                std::min<size_t>(static_cast<size_t>(std::max(b.first, 0)), last_group),
                                std::min<size_t>(static_cast<size_t>(std::max(b.last, 0)), last_group)});
  for (const AotWeight& w : plan.weights) m.add_slot(w, Slot::Weight, w.offset);

  for (const AotKvCache& c : plan.kv_caches) {
    Slot& present = m.slot(c.present, "kv cache");
    present.kind = Slot::Cache;
    present.written.type = present.buf.type;
    m.caches.push_back(Impl::Cache{c, &present, c.past.empty() ? nullptr : &m.slot(c.past, "kv cache")});
  }
  m.arena = aligned_bytes(m.arena_bytes);
  for (auto& [name, s] : m.slots)
    if (s.kind == Slot::Arena) s.buf.host = m.arena.get() + s.offset;

  // The NPU tile model: the target and each kernel's stage map (see aot_compiler.h).
  std::map<std::string, const NpuStageMap*> stages_of;
  m.npu = plan.npu;
  if (m.npu) {
    m.npu_target = plan.npu_target;
    for (const AotKernel& k : plan.kernels)
      if (!k.function.empty()) stages_of[k.function] = &k.npu_stages;
    if (aot_library) install_npu_trace();  // JIT kernels route their trace themselves
  }

  m.dims = plan.dims;
  m.classes = plan.classes;
  // Until a run binds them (run_group before any run): the dims at their upper bounds, where the
  // slots' shapes are.
  m.current_class = 0;
  for (const AotDim& d : m.dims) {
    m.dim_values.push_back(static_cast<int32_t>(d.range.hi));
    m.bound[d.name] = d.range.hi;
  }
  for (size_t c = 0; c < m.classes.size(); ++c)
    if (ranges_hold(m.classes[c], m.bound)) m.current_class = c;
  for (const AotGroup& grp : plan.groups) {
    const std::string where = "group g" + std::to_string(grp.id);
    Impl::Step st;
    st.label = where + " " + grp.kind + " " + grp.label + (grp.kernel.empty() ? "" : " (" + grp.kernel + ")");
    for (const std::string& in : grp.inputs) st.args.push_back(&m.slot(in, where));
    st.num_inputs = st.args.size();
    for (const std::string& o : grp.kernel_outputs) st.args.push_back(&m.slot(o, where));
    for (const std::string& fn : grp.class_kernels) {
      if (fn.empty()) {
        st.fns.push_back(nullptr);
        continue;
      }
      auto it = table.find(fn);
      if (it == table.end())
        m.fail(where + ": kernel '" + fn + "' is not in the kernel table (linked the wrong library?)");
      st.fns.push_back(it->second);
    }
    auto position = [&](const std::string& v) {
      return static_cast<size_t>(std::find(grp.inputs.begin(), grp.inputs.end(), v) - grp.inputs.begin());
    };
    for (const AotIndexCheck& c : grp.index_checks)  // validate(): both are group inputs
      st.index_checks.push_back(Impl::Step::IndexCheck{position(c.indices), position(c.data),
                                                       m.slot(c.indices, where).dtype, c.axis,
                                                       "node '" + c.node + "' (" + c.op + ")", c.indices});
    m.npu_stages.push_back(m.npu && !grp.kernel.empty() ? *stages_of.at(grp.kernel) : NpuStageMap());
    m.steps.push_back(std::move(st));
  }
  m.ms.assign(m.steps.size(), 0.0);
}

PlanRunner::PlanRunner(const std::string& plan_path, const gaf_aot_library& library)
    : PlanRunner(plan_path, table_of(library.kernels), library.table_hash ? library.table_hash : "") {}

PlanRunner::PlanRunner(const std::string& plan_path, std::map<std::string, PlanKernel> table,
                       const std::string& table_hash)
    : impl_(new Impl) {
  Impl& m = *impl_;
  m.file = plan_path;
  const AotPlan plan = AotPlan::from_json(read_text(plan_path), plan_path);
  plan.validate(plan_path);
  if (plan.kernel_table_hash_recorded != table_hash)
    m.fail("field 'kernel_table_hash': '" + plan.kernel_table_hash_recorded + "', the kernel library's is '" +
           table_hash + "' (a plan compiled for another model, shape or library)");
  m.load(plan, table, true);

  // Weights: one read of the whole file, whose size the plan states.
  fs::path wpath = fs::path(plan_path).parent_path() / plan.weights_file;
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
  for (auto& [name, s] : m.slots)
    if (s.kind == Slot::Weight) s.buf.host = m.weights.get() + s.offset;
}

PlanRunner::PlanRunner(const AotPlan& plan, std::map<std::string, PlanKernel> table,
                       std::map<std::string, Tensor> weights)
    : impl_(new Impl) {
  Impl& m = *impl_;
  m.file = "the plan of " + plan.name;
  plan.validate(m.file);
  m.load(plan, table, false);
  for (const AotWeight& w : plan.weights) {
    auto it = weights.find(w.name);
    if (it == weights.end()) m.fail("weight '" + w.name + "' was not given");
    if (it->second.dtype() != w.dtype || it->second.shape() != w.shape || it->second.is_window())
      m.fail("weight '" + w.name + "' is " + dtype_name(it->second.dtype()) + " " + shape_str(it->second.shape()) +
             ", the plan's is " + dtype_name(w.dtype) + " " + shape_str(w.shape));
    m.slots.at(w.name).buf.host = static_cast<uint8_t*>(const_cast<void*>(it->second.raw()));
  }
  m.weight_tensors = std::move(weights);
}

PlanRunner::~PlanRunner() = default;

std::map<std::string, Tensor> PlanRunner::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> outputs;
  run(inputs, outputs);
  return outputs;
}

void PlanRunner::run(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs) {
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
  }
  if (!m.dims.empty()) m.bind_dims(inputs);
  for (const TensorSpec& in : m.ins) {
    const Tensor& t = inputs.at(in.name);
    Slot& s = m.slots.at(in.name);
    if (t.shape() != s.shape)
      throw GafError(
          "input '" + in.name + "': shape " + shape_str(t.shape()) + ", the compiled model expects " +
          (s.sym_shape.empty() ? shape_str(s.shape) : sym_shape_str(s.sym_shape) + " = " + shape_str(s.shape)));
    halide_view_of(t, s.buf, s.dims);  // a past fed back is a window of its cache's block
  }
  // KV caches: present computed into a window of a block the caller keeps (runtime/cache_window.h).
  for (Impl::Cache& c : m.caches) {
    auto kept = outputs.find(c.spec.present);
    CacheWindow w = bind_cache_window(c.spec.present, c.present->dtype, c.present->shape, c.spec.axis, c.spec.capacity,
                                      c.spec.append, c.past ? &inputs.at(c.spec.past) : nullptr,
                                      kept == outputs.end() ? nullptr : &kept->second);
    if (w.moved_past) halide_view_of(*w.moved_past, c.past->buf, c.past->dims);
    halide_view_of(w.whole, c.present->buf, c.present->dims);
    halide_view_of(w.written, c.present->written, c.present->written_dims);
    outputs[c.spec.present] = w.whole;
  }
  if (m.npu) m.npu_counts.assign(m.steps.size(), NpuCounts());
  std::vector<halide_buffer_t*> bufs;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    Impl::Step& st = m.steps[s];
    bufs.clear();
    for (size_t i = 0; i < st.args.size(); ++i) {
      Slot* a = st.args[i];
      // The group computing a cache's present writes its window of new rows; readers read all.
      bufs.push_back(a->kind == Slot::Cache && i >= st.num_inputs ? &a->written : &a->buf);
    }
    m.invoke(s, bufs);
  }
  // A static plan's values have one size: its peak is the same every run.
  if (!m.dims.empty() || m.peak_bytes == 0) m.peak_bytes = std::max(m.peak_bytes, m.live_peak());
  // Outputs out of the arena into the caller's tensors (reused when they fit); caches are set.
  for (const TensorSpec& o : m.outs) {
    const Slot& s = m.slots.at(o.name);
    if (s.kind == Slot::Cache) continue;
    Tensor& t = outputs[o.name];
    if (t.dtype() != o.dtype || t.shape() != s.shape || !t.raw() || t.is_window())
      t = Tensor::uninitialized(o.dtype, s.shape);
    if (s.bytes) std::memcpy(t.raw(), s.buf.host, static_cast<size_t>(s.bytes));
  }
  for (const TensorSpec& in : m.ins) m.slots.at(in.name).buf.host = nullptr;
}

std::vector<Tensor> PlanRunner::run_group(size_t s, const std::vector<const Tensor*>& inputs) {
  Impl& m = *impl_;
  Impl::Step& st = m.steps.at(s);
  if (inputs.size() != st.num_inputs)
    throw GafError(st.label + ": " + std::to_string(inputs.size()) + " inputs given, it reads " +
                   std::to_string(st.num_inputs));
  std::vector<halide_buffer_t> bufs(st.args.size());
  std::vector<std::vector<halide_dimension_t>> dims(st.args.size());
  std::vector<Tensor> outs;
  for (size_t i = 0; i < st.args.size(); ++i) {
    bufs[i].type = st.args[i]->buf.type;
    if (i < st.num_inputs) {
      if (!inputs[i]) throw GafError(st.label + ": input " + std::to_string(i) + " is missing");
      halide_view_of(*inputs[i], bufs[i], dims[i]);
    } else {
      outs.push_back(Tensor::uninitialized(st.args[i]->dtype, st.args[i]->shape));
      halide_view_of(outs.back(), bufs[i], dims[i]);
    }
  }
  std::vector<halide_buffer_t*> ptrs;
  for (halide_buffer_t& b : bufs) ptrs.push_back(&b);
  m.invoke(s, ptrs);
  return outs;
}

void PlanRunner::set_group_hook(std::function<void(size_t)> hook) { impl_->group_hook = std::move(hook); }
size_t PlanRunner::peak_bytes() const { return impl_->peak_bytes; }

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
