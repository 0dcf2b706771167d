#include "engine/generator.h"

#include <chrono>
#include <cstring>
#include <filesystem>

#include "fusion/frontend/onnx_import.h"

namespace gaf {

namespace {

constexpr const char* kIds = kDecoderIds;
constexpr const char* kPastPrefix = kDecoderPastPrefix;
constexpr const char* kLogits = kDecoderLogits;

bool has_output(const Graph& g, const std::string& name) {
  for (const std::string& o : g.outputs())
    if (o == name) return true;
  return false;
}

// input_ids' two dims: the batch and the sequence. Each is a symbol or the value given.
std::pair<Dim, Dim> ids_dims(const Graph& g, const std::string& file) {
  for (const std::string& in : g.inputs()) {
    if (in != kIds) continue;
    const TensorType& t = g.value(in).type;
    if (t.dtype != DType::Int64 || t.dims.size() != 2)
      throw GafError(file + ": input 'input_ids' is " + t.str() + ", expected int64 [batch, seq]");
    return {t.dims[0], t.dims[1]};
  }
  throw GafError(file + ": has no input 'input_ids'");
}

// Binds a dim of the model to one value: a symbol is bound, a fixed extent must equal it.
void bind_dim(ModelOptions& m, const Dim& d, int64_t v, const std::string& file, const std::string& what) {
  if (!d.symbol.empty())
    m.dims[d.symbol] = v;
  else if (d.value != v)
    throw GafError(file + ": input 'input_ids' has " + what + " " + std::to_string(d.value) + ", the run needs " +
                   std::to_string(v));
}

std::string path_in(const std::string& dir, const char* file) { return (std::filesystem::path(dir) / file).string(); }

}  // namespace

DecoderFiles decoder_files(const std::string& dir) {
  const std::string pf = path_in(dir, "decoder_model.onnx"), sf = path_in(dir, "decoder_with_past_model.onnx"),
                    single = path_in(dir, "model.onnx"), merged = path_in(dir, "decoder_model_merged.onnx");
  auto is_file = [](const std::string& f) { return std::filesystem::is_regular_file(f); };
  if (is_file(pf) && is_file(sf)) return {pf, sf};
  if (is_file(merged)) {
    const std::vector<std::string> conditions = onnx_branch_inputs(merged);
    if (conditions.size() != 1)
      throw GafError(merged + ": expected one If on a bool input (use_cache_branch), found " +
                     std::to_string(conditions.size()));
    return {merged, merged, conditions[0]};
  }
  if (is_file(pf) && !is_file(sf)) return {pf, pf};
  if (is_file(single)) return {single, single};
  if (is_file(sf)) throw GafError(pf + ": no such file (decoder_with_past_model.onnx needs it beside it)");
  throw GafError(dir +
                 ": has no decoder (expected decoder_model.onnx and decoder_with_past_model.onnx, "
                 "decoder_model_merged.onnx, or model.onnx with past_key_values.* inputs)");
}

DecoderDims decoder_dims(const Graph& prefill, const Graph& step, const DecoderFiles& files, int64_t batch,
                         int64_t max_len) {
  const std::string& pf = files.prefill;
  const std::string& sf = files.step;
  if (max_len < 2)
    throw GafError("--max-len " + std::to_string(max_len) + ": must be at least 2 (a prompt and one step)");
  DecoderDims d;
  auto [pb, ps] = ids_dims(prefill, pf);
  bind_dim(d.prefill, pb, batch, pf, "batch");
  if (ps.symbol.empty())
    throw GafError(pf + ": input 'input_ids' has a fixed length " + std::to_string(ps.value) +
                   ", expected a symbolic seq dim");
  if (max_len == 1)
    d.prefill.dims[ps.symbol] = 1;
  else
    d.prefill.dim_ranges[ps.symbol] = {1, max_len};

  auto [sb, ss] = ids_dims(step, sf);
  bind_dim(d.step, sb, batch, sf, "batch");
  bind_dim(d.step, ss, 1, sf, "seq");
  for (const std::string& in : step.inputs()) {
    if (in == kIds) continue;
    if (in.rfind(kPastPrefix, 0) != 0)
      throw GafError(sf + ": input '" + in + "' is neither input_ids nor a past_key_values.* input");
    const std::string present = present_of(in);
    if (!has_output(step, present)) throw GafError(sf + ": input '" + in + "' has no output '" + present + "'");
    if (!has_output(prefill, present)) throw GafError(pf + ": has no output '" + present + "' (for '" + in + "')");
    for (const Dim& dim : step.value(in).type.dims)
      if (!dim.symbol.empty() && !d.step.dims.count(dim.symbol)) {
        d.step.dim_ranges[dim.symbol] = {1, max_len - 1};
        if (files.single()) d.prefill.dims[dim.symbol] = 0;  // the prefill: no past yet
      }
  }
  if (d.step.dim_ranges.empty()) throw GafError(sf + ": no past_key_values.* input with a symbolic length");
  for (const auto* g : {&prefill, &step})
    if (!has_output(*g, kLogits)) throw GafError((g == &prefill ? pf : sf) + ": has no output 'logits'");
  return d;
}

Generator::Generator(const std::string& dir, int64_t batch, int64_t max_len, EngineOptions base)
    : dir_(dir), files_(decoder_files(dir)), batch_(batch), max_len_(max_len) {
  const std::string& pf = files_.prefill;
  const std::string& sf = files_.step;
  const Graph step_graph = import_onnx_file(sf, files_.step_branch());
  const bool same_graph = files_.single() && files_.branch.empty();
  dims_ = decoder_dims(same_graph ? step_graph : import_onnx_file(pf, files_.prefill_branch()), step_graph, files_,
                       batch, max_len);
  EngineOptions po = base, so = base;
  po.model = dims_.prefill;
  so.model = dims_.step;
  po.model.branches = files_.prefill_branch();
  po.model.last_row_outputs = {kLogits};  // the sampler reads the last position's logits only
  so.model.branches = files_.step_branch();
  // The runtime's KV caches: every present.X in a block of max_len rows along the cache axis
  // (the dim of past_key_values.X that is the cache length), appended in place by each step.
  for (const std::string& in : step_graph.inputs()) {
    if (in == kIds) continue;
    decoder_.pasts.push_back(in);
    const std::vector<Dim>& dims = step_graph.value(in).type.dims;
    int axis = -1;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!dims[d].symbol.empty() && dims_.step.dim_ranges.count(dims[d].symbol)) axis = static_cast<int>(d);
    if (axis < 0) throw GafError(sf + ": input '" + in + "' has no cache-length dim");
    po.kv_caches.push_back(KvCacheBinding{present_of(in), "", axis, max_len});
    so.kv_caches.push_back(KvCacheBinding{present_of(in), in, axis, max_len});
  }
  prefill_ = std::make_unique<Engine>(pf, po);
  step_ = std::make_unique<Engine>(sf, so);
  // A single file's prefill reads every past as a tensor of length 0.
  if (files_.single())
    for (const std::string& in : decoder_.pasts)
      decoder_.prefill_inputs[in] =
          Tensor(prefill_->graph().value(in).type.dtype, prefill_->graph().value(in).type.shape());
  decoder_.prefill = [this](const NamedTensors& in, NamedTensors& out) { prefill_->run(in, out); };
  decoder_.step = [this](const NamedTensors& in, NamedTensors& out) {
    if (!profiling_) return step_->run(in, out);
    const auto t0 = std::chrono::steady_clock::now();
    step_->run(in, out);
    profile_.run_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<double>& ms = step_->compile().runner->group_ms();
    profile_.group_ms.resize(ms.size(), 0.0);
    for (size_t s = 0; s < ms.size(); ++s) profile_.group_ms[s] += ms[s];
    ++profile_.steps;
  };
}

double DecodeProfile::kernel_ms() const {
  double sum = 0;
  for (double ms : group_ms) sum += ms;
  return sum;
}

void Generator::set_profiling(bool on) {
  step_->compile().runner->set_profiling(on);
  profiling_ = on;
  profile_ = DecodeProfile();
}

Generator::~Generator() = default;

int64_t Generator::vocab() const { return prefill_->graph().value(kLogits).type.dims.back().value; }

void Generator::compile() {
  prefill_->compile();
  step_->compile();
}

Generation Generator::generate(const Tensor& prompt, int64_t new_tokens, const Sampling& sampling) {
  if (prompt.dtype() != DType::Int64 || prompt.shape().size() != 2 || prompt.shape()[0] != batch_ ||
      prompt.shape()[1] < 1)
    throw GafError("prompt is " + std::string(dtype_name(prompt.dtype())) + " " + shape_str(prompt.shape()) +
                   ", expected int64 [" + std::to_string(batch_) + ", P] with P >= 1");
  const int64_t p = prompt.shape()[1];
  if (new_tokens < 1) throw GafError("new tokens: " + std::to_string(new_tokens) + ", expected at least 1");
  if (p + new_tokens - 1 > max_len_)
    throw GafError("prompt " + std::to_string(p) + " + " + std::to_string(new_tokens) + " new tokens needs --max-len " +
                   std::to_string(p + new_tokens - 1) + " or more (it is " + std::to_string(max_len_) + ")");
  compile();
  return decode_tokens(decoder_, prompt, new_tokens, sampling);
}

}  // namespace gaf
