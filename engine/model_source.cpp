#include "engine/model_source.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include <spdlog/spdlog.h>

#include "fusion/frontend/last_row.h"
#include "fusion/frontend/onnx_import.h"
#include "fusion/models/bert.h"
#include "runtime/memory_budget.h"

namespace gaf {

std::vector<std::string> builtin_model_names() { return {"bert-base"}; }

DimBinding parse_dim_binding(const std::string& s) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw GafError("--dim '" + s + "': expected NAME=VALUE or NAME=LO..HI, e.g. --dim seq=128 or --dim seq=1..512");
  const std::string value = s.substr(eq + 1);
  const size_t dots = value.find("..");
  auto positive = [&](const std::string& text) {
    std::optional<int64_t> v = parse_size(text);
    if (!v || *v == 0) throw GafError("--dim '" + s + "': '" + text + "' must be a positive integer");
    return *v;
  };
  DimBinding b{s.substr(0, eq), {}};
  if (dots == std::string::npos) {
    // One value may be 0: a zero-size dim runs (a decoder's cache before its first token, as
    // the prefill of a single-file or merged decoder binds it). Ranges start at 1.
    std::optional<int64_t> v = parse_size(value);
    if (!v) throw GafError("--dim '" + s + "': '" + value + "' must be a non-negative integer");
    b.range.lo = b.range.hi = *v;
  } else {
    b.range.lo = positive(value.substr(0, dots));
    b.range.hi = positive(value.substr(dots + 2));
    if (b.range.lo > b.range.hi) throw GafError("--dim '" + s + "': the range is empty (LO > HI)");
  }
  return b;
}

namespace {

// Every --dim must name a symbolic dim of the model: a typo would otherwise bind nothing.
void check_dims_named(const Graph& g, const std::set<std::string>& dims, const std::string& spec) {
  std::set<std::string> symbols;
  for (const auto& [name, v] : g.values())
    for (const Dim& d : v.type.dims)
      if (!d.symbol.empty()) symbols.insert(d.symbol);
  for (const std::string& name : dims) {
    if (symbols.count(name)) continue;
    std::string list;
    for (const std::string& s : symbols) list += (list.empty() ? "" : ", ") + s;
    throw GafError("--dim '" + name + "': " + spec + " has no symbolic dim of that name (" +
                   (list.empty() ? "it has none" : "it has: " + list) + ")");
  }
}

}  // namespace

LoadedModel load_model(const std::string& spec, const ModelOptions& opts, ReferenceExecutor& folder,
                       const TensorMap& known_inputs) {
  LoadedModel m;
  m.spec = spec;
  std::map<std::string, int64_t> dims = opts.dims;
  const std::string prefix = "builtin:";
  if (spec.rfind(prefix, 0) == 0) {
    std::string name = spec.substr(prefix.size());
    if (name != "bert-base") {
      std::string list;
      for (const std::string& n : builtin_model_names()) list += (list.empty() ? "" : ", ") + prefix + n;
      throw GafError("unknown built-in model '" + spec + "' (available: " + list + ")");
    }
    if (!opts.branches.empty()) throw GafError(spec + ": has no If to take a --branch of");
    if (opts.layers < 1 || opts.seq < 1 || opts.batch < 1)
      throw GafError(spec + ": --layers, --seq and --batch must be positive");
    BertConfig cfg;
    cfg.layers = opts.layers;
    check_memory_budget(bert_weight_bytes(cfg), spec + ": the weights of " + std::to_string(cfg.layers) + " layers");
    m.graph = build_bert(cfg);
    if (!opts.dim_ranges.count("seq")) dims.emplace("seq", opts.seq);
    if (!opts.dim_ranges.count("batch")) dims.emplace("batch", opts.batch);
    auto dim_text = [&](const std::string& name) {
      auto r = opts.dim_ranges.find(name);
      return r != opts.dim_ranges.end() ? r->second.str() : std::to_string(dims[name]);
    };
    m.description = spec + " (" + std::to_string(cfg.layers) + " layers, hidden " + std::to_string(cfg.hidden) +
                    ", seq " + dim_text("seq") + ", batch " + dim_text("batch") + ")";
  } else {
    m.graph = import_onnx_file(spec, opts.branches);
    m.description = spec;
    // Symbols not given with --dim are bound from the shapes of the given inputs.
    for (const auto& [name, t] : known_inputs) {
      if (!m.graph.has_value(name)) continue;
      const TensorType& ty = m.graph.value(name).type;
      if (!ty.rank_known || ty.dims.size() != t.shape().size()) continue;
      for (size_t d = 0; d < ty.dims.size(); ++d)
        if (!ty.dims[d].symbol.empty() && !opts.dim_ranges.count(ty.dims[d].symbol))
          dims.emplace(ty.dims[d].symbol, t.shape()[d]);
    }
  }
  std::set<std::string> named;
  for (const auto& [name, v] : opts.dims) named.insert(name);
  for (const auto& [name, r] : opts.dim_ranges) named.insert(name);
  check_dims_named(m.graph, named, spec);
  NodeEvaluator eval = [&folder](const Node& n, const std::vector<const Tensor*>& in,
                                 const std::vector<const TensorDesc*>& types) { return folder.run_node(n, in, types); };
  try {
    m.passes = prepare_graph(m.graph, dims, eval, opts.dim_ranges);
    for (const std::string& out : opts.last_row_outputs) {
      const std::vector<std::string>& outs = m.graph.outputs();
      if (std::find(outs.begin(), outs.end(), out) == outs.end())
        throw GafError("has no output '" + out + "' (--last-row-output)");
      if (slice_output_to_last_row(m.graph, out))
        spdlog::info("{}: '{}' computed for its last position only", spec, out);
      else
        spdlog::info("{}: '{}' is not a MatMul by a weight: computed at every position", spec, out);
    }
  } catch (const GafError& e) {
    throw GafError(spec + ": " + e.what());
  }
  return m;
}

std::string describe_default_inputs(uint32_t seed, const std::optional<std::pair<float, float>>& uniform) {
  char f[96] = "float32 N(0,1) (attention_mask: ones)";
  if (uniform) std::snprintf(f, sizeof f, "float32 uniform in [%g, %g]", uniform->first, uniform->second);
  return "generated (seed " + std::to_string(seed) + "): " + f + ", int64 zeros, bool true";
}

TensorMap make_default_inputs(const Graph& g, uint32_t seed, const std::optional<std::pair<float, float>>& uniform) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> in_range(uniform ? uniform->first : 0.0f, uniform ? uniform->second : 1.0f);
  TensorMap inputs;
  for (const std::string& name : g.inputs()) {
    const TensorType& ty = g.value(name).type;
    Tensor t;
    try {
      t = Tensor(ty.dtype, ty.shape());
    } catch (const GafError& e) {
      throw GafError("generated input '" + name + "': " + e.what());
    }
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (ty.dtype) {
        case DType::Float32:
          t.data<float>()[i] = uniform ? in_range(rng) : name == "attention_mask" ? 1.0f : normal(rng);
          break;
        case DType::Int64: t.data<int64_t>()[i] = 0; break;
        case DType::Bool: t.data<uint8_t>()[i] = 1; break;
        case DType::Float16: t.data<uint16_t>()[i] = float_to_fp16_bits(uniform ? in_range(rng) : normal(rng)); break;
        case DType::BFloat16: t.data<uint16_t>()[i] = float_to_bf16_bits(uniform ? in_range(rng) : normal(rng)); break;
        case DType::Int8:
        case DType::UInt8:
        case DType::Int32: break;  // zeros (the tensor starts zero-filled)
      }
    }
    inputs[name] = t;
  }
  return inputs;
}

}  // namespace gaf
