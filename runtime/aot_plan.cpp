#include "runtime/aot_plan.h"

#include "runtime/fnv_hash.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

namespace gaf {

using nlohmann::json;

namespace {

json tensor_json(const AotTensor& t) {
  json j{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
  if (!t.sym_shape.empty()) {
    j["sym_shape"] = json::array();
    for (const SymExpr& e : t.sym_shape) j["sym_shape"].push_back(e.str());
  }
  return j;
}

// Reads fields with their path ("groups[3].inputs[1]") in every error.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw GafError(origin_ + ": field '" + path + "': " + what);
  }
  const json& at(const json& j, const std::string& path, const char* key) const {
    if (!j.is_object()) fail(path, "expected an object");
    if (!j.contains(key)) fail(join(path, key), "missing");
    return j.at(key);
  }
  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
  std::string str(const json& j, const std::string& path, const char* key) const {
    const json& v = at(j, path, key);
    if (!v.is_string()) fail(join(path, key), "expected a string");
    return v.get<std::string>();
  }
  int64_t integer(const json& j, const std::string& path, const char* key, int64_t min = 0) const {
    const json& v = at(j, path, key);
    if (!v.is_number_integer()) fail(join(path, key), "expected an integer");
    int64_t x = v.get<int64_t>();
    if (x < min) fail(join(path, key), std::to_string(x) + " is below " + std::to_string(min));
    return x;
  }
  bool boolean(const json& j, const std::string& path, const char* key) const {
    const json& v = at(j, path, key);
    if (!v.is_boolean()) fail(join(path, key), "expected true or false");
    return v.get<bool>();
  }
  const json& array(const json& j, const std::string& path, const char* key) const {
    const json& v = at(j, path, key);
    if (!v.is_array()) fail(join(path, key), "expected an array");
    return v;
  }
  std::vector<std::string> strings(const json& j, const std::string& path, const char* key) const {
    std::vector<std::string> out;
    const json& a = array(j, path, key);
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) fail(join(path, key) + "[" + std::to_string(i) + "]", "expected a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  }
  void tensor(const json& j, const std::string& path, AotTensor& t) const {
    t.name = str(j, path, "name");
    std::string d = str(j, path, "dtype");
    bool known = false;
    for (DType x : kAllDTypes)
      if (d == dtype_name(x)) t.dtype = x, known = true;
    if (!known) fail(join(path, "dtype"), "unknown dtype '" + d + "'");
    const json& s = array(j, path, "shape");
    t.shape.clear();
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer() || s[i].get<int64_t>() < 0)
        fail(join(path, "shape") + "[" + std::to_string(i) + "]", "expected a non-negative integer");
      t.shape.push_back(s[i].get<int64_t>());
    }
    t.sym_shape.clear();
    if (!j.contains("sym_shape")) return;
    const std::vector<std::string> dims = strings(j, path, "sym_shape");
    if (dims.size() != t.shape.size()) fail(join(path, "sym_shape"), "has another rank than 'shape'");
    for (size_t i = 0; i < dims.size(); ++i) {
      std::optional<SymExpr> e = SymExpr::parse(dims[i]);
      if (!e)
        fail(join(path, "sym_shape") + "[" + std::to_string(i) + "]", "'" + dims[i] + "' is not a dim expression");
      t.sym_shape.push_back(*e);
    }
  }
  // A tensor with its place in the arena or the weights file.
  void placed(const json& j, const std::string& path, AotTensor& t, int64_t& offset, int64_t& bytes) const {
    tensor(j, path, t);
    offset = integer(j, path, "offset");
    bytes = integer(j, path, "bytes");
  }

 private:
  std::string origin_;
};

std::string item(const char* list, size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

}  // namespace

std::string AotPlan::to_json() const {
  json j;
  j["schema"] = kSchema;
  j["name"] = name;
  j["model"] = model;
  j["halide_target"] = halide_target;
  j["target"] = npu ? "npu-tile" : "host";
  if (npu) j["npu_target"] = json::parse(npu_target_json(npu_target));
  j["library"] = library;
  j["header"] = header;
  j["weights_file"] = weights_file;
  j["weights_bytes"] = weights_bytes;
  j["kernel_table_hash"] = kernel_table_hash_recorded;
  j["inputs"] = json::array();
  for (const AotTensor& t : inputs) j["inputs"].push_back(tensor_json(t));
  j["outputs"] = json::array();
  for (const AotTensor& t : outputs) j["outputs"].push_back(tensor_json(t));
  j["dims"] = json::array();
  for (const AotDim& d : dims) j["dims"].push_back({{"name", d.name}, {"lo", d.range.lo}, {"hi", d.range.hi}});
  j["classes"] = json::array();
  for (const SymbolRanges& c : classes) {
    json cj = json::object();
    for (const auto& [name, r] : c) cj[name] = {r.lo, r.hi};
    j["classes"].push_back(cj);
  }
  j["kernels"] = json::array();
  for (const AotKernel& k : kernels) {
    json kj = {
        {"function", k.function}, {"signature", k.signature}, {"tuned", k.tuned}, {"first_group", k.first_group}};
    if (k.has_npu) {
      kj["npu_stages"] = json::parse(npu_stage_map_json(k.npu_stages));
      kj["npu_tiles"] = k.npu_tiles;
    }
    j["kernels"].push_back(kj);
  }
  j["arena"] = {{"bytes", arena_bytes}, {"lower_bound", arena_lower_bound}, {"alignment", arena_alignment}};
  j["buffers"] = json::array();
  for (const AotBuffer& b : buffers) {
    json bj = tensor_json(b);
    bj["offset"] = b.offset;
    bj["bytes"] = b.bytes;
    bj["live"] = {b.first, b.last};
    j["buffers"].push_back(bj);
  }
  j["weights"] = json::array();
  for (const AotWeight& w : weights) {
    json wj = tensor_json(w);
    wj["offset"] = w.offset;
    wj["bytes"] = w.bytes;
    j["weights"].push_back(wj);
  }
  j["groups"] = json::array();
  for (const AotGroup& g : groups) {
    json gj{{"id", g.id},
            {"kind", g.kind},
            {"label", g.label},
            {"kernel", g.kernel},
            {"inputs", g.inputs},
            {"outputs", g.outputs},
            {"kernel_outputs", g.kernel_outputs}};
    if (!dims.empty()) gj["class_kernels"] = g.class_kernels;
    for (const AotIndexCheck& c : g.index_checks)
      gj["index_checks"].push_back(
          json{{"node", c.node}, {"op", c.op}, {"indices", c.indices}, {"data", c.data}, {"axis", c.axis}});
    j["groups"].push_back(gj);
  }
  for (const AotKvCache& c : kv_caches)
    j["kv_caches"].push_back(json{
        {"present", c.present}, {"past", c.past}, {"axis", c.axis}, {"capacity", c.capacity}, {"append", c.append}});
  if (!cpu_features.empty()) j["cpu_features"] = cpu_features;
  return j.dump(1) + "\n";
}

AotPlan AotPlan::from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw GafError(origin + ": not valid JSON: " + e.what());
  }
  const Reader r(origin);
  AotPlan p;
  const std::string schema = r.str(j, "", "schema");
  if (schema != kSchema) r.fail("schema", "'" + schema + "', expected " + kSchema);
  p.name = r.str(j, "", "name");
  p.model = r.str(j, "", "model");
  p.halide_target = r.str(j, "", "halide_target");
  const std::string target = r.str(j, "", "target");
  if (target != "host" && target != "npu-tile") r.fail("target", "'" + target + "', expected host or npu-tile");
  p.npu = target == "npu-tile";
  if (p.npu) p.npu_target = parse_npu_target(r.at(j, "", "npu_target").dump(), origin + ": field 'npu_target'");
  p.library = r.str(j, "", "library");
  p.header = r.str(j, "", "header");
  p.weights_file = r.str(j, "", "weights_file");
  p.weights_bytes = r.integer(j, "", "weights_bytes");
  p.kernel_table_hash_recorded = r.str(j, "", "kernel_table_hash");
  const json& ins = r.array(j, "", "inputs");
  for (size_t i = 0; i < ins.size(); ++i) r.tensor(ins[i], item("inputs", i), p.inputs.emplace_back());
  const json& outs = r.array(j, "", "outputs");
  for (size_t i = 0; i < outs.size(); ++i) r.tensor(outs[i], item("outputs", i), p.outputs.emplace_back());
  // Plans without "dims" are static (written before dims could be dynamic).
  if (j.contains("dims")) {
    const json& ds = r.array(j, "", "dims");
    for (size_t i = 0; i < ds.size(); ++i) {
      const std::string path = item("dims", i);
      AotDim& d = p.dims.emplace_back();
      d.name = r.str(ds[i], path, "name");
      d.range.lo = r.integer(ds[i], path, "lo", 1);
      d.range.hi = r.integer(ds[i], path, "hi", d.range.lo);
    }
    const json& cs = r.array(j, "", "classes");
    for (size_t i = 0; i < cs.size(); ++i) {
      const std::string path = item("classes", i);
      SymbolRanges& c = p.classes.emplace_back();
      for (const AotDim& d : p.dims) {
        const json& lohi = r.array(cs[i], path, d.name.c_str());
        if (lohi.size() != 2 || !lohi[0].is_number_integer() || !lohi[1].is_number_integer())
          r.fail(path + "." + d.name, "expected [lo, hi]");
        c[d.name] = SymbolRange{lohi[0].get<int64_t>(), lohi[1].get<int64_t>()};
      }
    }
  }
  const json& ks = r.array(j, "", "kernels");
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string path = item("kernels", i);
    AotKernel& k = p.kernels.emplace_back();
    k.function = r.str(ks[i], path, "function");
    k.signature = r.str(ks[i], path, "signature");
    k.tuned = r.boolean(ks[i], path, "tuned");
    k.first_group = static_cast<int>(r.integer(ks[i], path, "first_group"));
    if (p.npu && !k.function.empty()) {
      k.has_npu = true;
      k.npu_stages =
          parse_npu_stage_map(r.at(ks[i], path, "npu_stages").dump(), origin + ": field '" + path + ".npu_stages'");
      k.npu_tiles = r.strings(ks[i], path, "npu_tiles");
    }
  }
  const json& arena = r.at(j, "", "arena");
  p.arena_bytes = r.integer(arena, "arena", "bytes");
  p.arena_lower_bound = r.integer(arena, "arena", "lower_bound");
  p.arena_alignment = r.integer(arena, "arena", "alignment", 1);
  const json& bs = r.array(j, "", "buffers");
  for (size_t i = 0; i < bs.size(); ++i) {
    const std::string path = item("buffers", i);
    AotBuffer& b = p.buffers.emplace_back();
    r.placed(bs[i], path, b, b.offset, b.bytes);
    const json& live = r.array(bs[i], path, "live");
    if (live.size() != 2 || !live[0].is_number_integer() || !live[1].is_number_integer())
      r.fail(path + ".live", "expected [first group, last group]");
    b.first = live[0].get<int>();
    b.last = live[1].get<int>();
  }
  const json& ws = r.array(j, "", "weights");
  for (size_t i = 0; i < ws.size(); ++i) {
    const std::string path = item("weights", i);
    AotWeight& w = p.weights.emplace_back();
    r.placed(ws[i], path, w, w.offset, w.bytes);
  }
  const json& gs = r.array(j, "", "groups");
  for (size_t i = 0; i < gs.size(); ++i) {
    const std::string path = item("groups", i);
    AotGroup& g = p.groups.emplace_back();
    g.id = static_cast<int>(r.integer(gs[i], path, "id"));
    g.kind = r.str(gs[i], path, "kind");
    g.label = r.str(gs[i], path, "label");
    g.kernel = r.str(gs[i], path, "kernel");
    g.inputs = r.strings(gs[i], path, "inputs");
    g.outputs = r.strings(gs[i], path, "outputs");
    g.kernel_outputs = r.strings(gs[i], path, "kernel_outputs");
    g.class_kernels = p.dims.empty() ? std::vector<std::string>{g.kernel} : r.strings(gs[i], path, "class_kernels");
    if (gs[i].contains("index_checks")) {
      const json& cs = r.array(gs[i], path, "index_checks");
      for (size_t k = 0; k < cs.size(); ++k) {
        const std::string cpath = path + ".index_checks[" + std::to_string(k) + "]";
        AotIndexCheck& c = g.index_checks.emplace_back();
        c.node = r.str(cs[k], cpath, "node");
        c.op = r.str(cs[k], cpath, "op");
        c.indices = r.str(cs[k], cpath, "indices");
        c.data = r.str(cs[k], cpath, "data");
        c.axis = static_cast<int>(r.integer(cs[k], cpath, "axis"));
      }
    }
  }
  if (j.contains("kv_caches")) {
    const json& cs = r.array(j, "", "kv_caches");
    for (size_t i = 0; i < cs.size(); ++i) {
      const std::string path = item("kv_caches", i);
      AotKvCache& c = p.kv_caches.emplace_back();
      c.present = r.str(cs[i], path, "present");
      c.past = r.str(cs[i], path, "past");
      c.axis = static_cast<int>(r.integer(cs[i], path, "axis"));
      c.capacity = r.integer(cs[i], path, "capacity", 1);
      c.append = r.boolean(cs[i], path, "append");
    }
  }
  if (j.contains("cpu_features")) {
    const json& fs = r.array(j, "", "cpu_features");
    for (size_t i = 0; i < fs.size(); ++i) {
      if (!fs[i].is_string()) r.fail(item("cpu_features", i), "not a string");
      p.cpu_features.push_back(fs[i].get<std::string>());
    }
  }
  return p;
}

void AotPlan::validate(const std::string& origin) const {
  auto fail = [&](const std::string& path, const std::string& what) {
    throw GafError(origin + ": field '" + path + "': " + what);
  };
  std::map<std::string, const AotTensor*> values;  // every value a kernel argument may name
  auto add = [&](const AotTensor& t, const std::string& path) {
    if (!values.emplace(t.name, &t).second) fail(path + ".name", "'" + t.name + "' is listed twice");
  };
  for (size_t i = 0; i < inputs.size(); ++i) add(inputs[i], item("inputs", i));
  if (arena_alignment <= 0 || arena_alignment % 64) fail("arena.alignment", "expected a multiple of 64");
  // A buffer or weight: its bytes its shape's, 64-byte aligned, inside its storage.
  auto check_slot = [&](const AotTensor& t, int64_t offset, int64_t bytes, int64_t limit, const std::string& path,
                        const char* storage) {
    add(t, path);
    if (bytes != t.nbytes())
      fail(path + ".bytes", std::to_string(bytes) + " for '" + t.name + "', its shape " + shape_str(t.shape) +
                                " takes " + std::to_string(t.nbytes()));
    if (offset % 64 || offset + bytes > limit)
      fail(path + ".offset", std::to_string(offset) + " for '" + t.name + "' is outside the " + std::to_string(limit) +
                                 "-byte " + storage + " or not 64-byte aligned");
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    const AotBuffer& b = buffers[i];
    const std::string path = item("buffers", i);
    check_slot(b, b.offset, b.bytes, arena_bytes, path, "arena");
    for (size_t k = 0; k < i; ++k) {  // buffers live at the same time must not share bytes
      const AotBuffer& o = buffers[k];
      bool live_together = b.first <= o.last && o.first <= b.last;
      bool overlap = b.offset < o.offset + o.bytes && o.offset < b.offset + b.bytes && b.bytes && o.bytes;
      if (live_together && overlap)
        fail(path + ".offset", "'" + b.name + "' overlaps '" + o.name + "' while both are live");
    }
  }
  for (size_t i = 0; i < weights.size(); ++i)
    check_slot(weights[i], weights[i].offset, weights[i].bytes, weights_bytes, item("weights", i), "weights file");
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = values.find(outputs[i].name);
    if (it == values.end()) fail(item("outputs", i) + ".name", "'" + outputs[i].name + "' has no storage in the plan");
    if (it->second->shape != outputs[i].shape || it->second->dtype != outputs[i].dtype)
      fail(item("outputs", i) + ".shape", "'" + outputs[i].name + "' differs from its storage's dtype or shape");
  }
  std::set<std::string> functions;
  for (const AotKernel& k : kernels)
    if (!k.function.empty()) functions.insert(k.function);
  std::set<std::string> in_arena;
  for (const AotBuffer& b : buffers) in_arena.insert(b.name);
  for (size_t i = 0; i < groups.size(); ++i) {
    const AotGroup& g = groups[i];
    const std::string path = item("groups", i);
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (!values.count(g.inputs[k]))
        fail(path + ".inputs[" + std::to_string(k) + "]", "'" + g.inputs[k] + "' has no storage in the plan");
    for (size_t k = 0; k < g.kernel_outputs.size(); ++k)
      if (!in_arena.count(g.kernel_outputs[k]))
        fail(path + ".kernel_outputs[" + std::to_string(k) + "]",
             "'" + g.kernel_outputs[k] + "' is not an arena buffer");
    if (!g.kernel.empty() && !functions.count(g.kernel))
      fail(path + ".kernel", "'" + g.kernel + "' is not in the plan's kernels");
    for (size_t k = 0; k < g.index_checks.size(); ++k) {
      const AotIndexCheck& c = g.index_checks[k];
      const std::string cpath = path + ".index_checks[" + std::to_string(k) + "]";
      for (const std::string* v : {&c.indices, &c.data})
        if (!std::count(g.inputs.begin(), g.inputs.end(), *v)) fail(cpath, "'" + *v + "' is not an input of the group");
      if (c.axis >= static_cast<int>(values.at(c.data)->shape.size()))
        fail(cpath + ".axis", std::to_string(c.axis) + " is beyond the rank of '" + c.data + "'");
    }
    if (!dims.empty() && g.class_kernels.size() != classes.size())
      fail(path + ".class_kernels",
           std::to_string(g.class_kernels.size()) + " kernels for " + std::to_string(classes.size()) + " size classes");
    for (size_t c = 0; c < g.class_kernels.size(); ++c)
      if (g.kernel.empty() != g.class_kernels[c].empty() || (!g.kernel.empty() && !functions.count(g.class_kernels[c])))
        fail(path + ".class_kernels[" + std::to_string(c) + "]",
             "'" + g.class_kernels[c] + "' is not in the plan's kernels");
  }
  for (size_t i = 0; i < kv_caches.size(); ++i) {
    const AotKvCache& c = kv_caches[i];
    const std::string path = item("kv_caches", i);
    const AotTensor* present = nullptr;
    for (const AotTensor& o : outputs)
      if (o.name == c.present) present = &o;
    if (!present) fail(path + ".present", "'" + c.present + "' is not an output");
    if (c.axis >= static_cast<int>(present->shape.size()))
      fail(path + ".axis", std::to_string(c.axis) + " is beyond the rank of '" + c.present + "'");
    bool is_input = c.past.empty();
    for (const AotTensor& in : inputs) is_input = is_input || in.name == c.past;
    if (!is_input) fail(path + ".past", "'" + c.past + "' is not an input");
  }
  if (!dims.empty()) {
    if (classes.empty()) fail("classes", "a plan with dynamic dims needs size classes");
    std::set<std::string> names;
    for (size_t i = 0; i < dims.size(); ++i)
      if (!names.insert(dims[i].name).second || dims[i].range.lo > dims[i].range.hi)
        fail(item("dims", i), "'" + dims[i].name + "' is listed twice or has an empty range");
    for (const auto& [name, t] : values)
      for (const SymExpr& e : t->sym_shape)
        for (const std::string& s : e.symbols())
          if (!names.count(s)) fail("dims", "'" + name + "' has a dim in '" + s + "', which is not a dynamic dim");
  }
  const std::string hash = kernel_table_hash();
  if (hash != kernel_table_hash_recorded)
    fail("kernel_table_hash", "'" + kernel_table_hash_recorded +
                                  "', but the plan's kernels and argument shapes give '" + hash +
                                  "' (was the file edited?)");
}

std::string AotPlan::kernel_table_hash() const {
  std::map<std::string, const AotTensor*> values;
  for (const AotTensor& t : inputs) values[t.name] = &t;
  for (const AotBuffer& b : buffers) values[b.name] = &b;
  for (const AotWeight& w : weights) values[w.name] = &w;
  std::string text = name + "\n";
  auto arg = [&](const std::string& v) {
    auto it = values.find(v);
    text += " " + v + ":" +
            (it == values.end() ? std::string("?") : dtype_name(it->second->dtype) + shape_str(it->second->shape));
    if (it != values.end() && !it->second->sym_shape.empty()) text += sym_shape_str(it->second->sym_shape);
  };
  for (const AotDim& d : dims) text += "dim " + d.name + "=" + d.range.str() + "\n";
  for (const SymbolRanges& c : classes) {
    text += "class";
    for (const auto& [name, r] : c) text += " " + name + "=" + r.str();
    text += "\n";
  }
  for (const AotKvCache& c : kv_caches)  // their kernels take window strides, not dense ones
    text += "cache " + c.present + "<" + c.past + " axis " + std::to_string(c.axis) + " capacity " +
            std::to_string(c.capacity) + (c.append ? " append" : "") + "\n";
  for (const AotGroup& g : groups) {
    if (g.kernel.empty()) continue;
    text += g.kernel + "(";
    if (!dims.empty())
      for (const std::string& k : g.class_kernels) text += k + ",";
    for (const std::string& v : g.inputs) arg(v);
    text += ";";
    for (const std::string& v : g.kernel_outputs) arg(v);
    text += ")\n";
  }
  return fnv1a_hex(text);
}

}  // namespace gaf
