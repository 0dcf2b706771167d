#include "apps/gaf-tune/group_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <utility>

namespace gaf::tune {

namespace {

Tensor random_like(const TensorType& t, std::mt19937& rng) {
  Tensor x(t.dtype, t.shape());
  if (t.dtype == DType::Float32) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  }  // int64 and bool inputs stay zero: indices and masks that are always in range
  return x;
}

// Empty when `got` equals `want` within fp32 rounding of a reordered sum (rel 1e-4 of the
// tensor's largest magnitude, so cancellation near zero does not count as a mismatch).
std::string mismatch(const Tensor& got, const Tensor& want) {
  if (got.dtype() != DType::Float32) {
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.as_int(i) != want.as_int(i)) return "element " + std::to_string(i) + " differs";
    return "";
  }
  double scale = 1e-30;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.as_double(i)));
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.as_double(i), w = want.as_double(i);
    if (std::isnan(g) != std::isnan(w) || std::fabs(g - w) > 1e-4 * scale)
      return "element " + std::to_string(i) + ": " + std::to_string(g) + " vs default " + std::to_string(w);
  }
  return "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

GroupTimer::GroupTimer(const Graph& g, const FusionGroup& grp, uint32_t seed, int repeat)
    : g_(g), grp_(grp), repeat_(std::max(1, repeat)) {
  std::mt19937 rng(seed);
  for (const std::string& in : grp.inputs) {
    const Value& v = g.value(in);
    inputs_.push_back(v.constant ? *v.constant : random_like(v.type, rng));
  }
  for (const Tensor& t : inputs_) input_ptrs_.push_back(&t);
}

std::vector<Tensor> GroupTimer::output_buffers(const GroupKernel& k) {
  std::vector<Tensor> outs;
  for (const TensorDesc& d : k.output_descs()) outs.push_back(Tensor::uninitialized(d.dtype, d.shape));
  return outs;
}

std::string GroupTimer::check_or_keep(const std::vector<Tensor>& outs, bool check) {
  if (!check) {
    expected_ = outs;
    return "";
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string bad = mismatch(outs[i], expected_.at(i));
    if (!bad.empty()) return "output " + grp_.outputs[i] + ": " + bad;
  }
  return "";
}

Measurement GroupTimer::run(GroupKernel& k, bool check) {
  std::vector<Tensor> outs = output_buffers(k);
  Measurement m;
  k.run(input_ptrs_, outs);  // warm-up, and the outputs checked
  m.problem = check_or_keep(outs, check);
  if (!m.problem.empty()) return m;
  m.ok = true;
  m.ms = median(time_runs(k, repeat_));
  return m;
}

Measurement GroupTimer::run_npu(GroupKernel& k, const NpuTarget& t, bool check) {
  std::vector<Tensor> outs = output_buffers(k);
  NpuCounts counts;
  if (const NpuStageMap* stages = k.npu_stages()) {
    NpuSimulator::Session session(*stages, counts);
    k.run(input_ptrs_, outs);
  } else {
    k.run(input_ptrs_, outs);  // nothing computed (zero-sized outputs): no work to model
  }
  Measurement m;
  m.tiles = k.npu_tiles();
  m.problem = check_or_keep(outs, check);
  if (!m.problem.empty()) return m;
  m.ok = true;
  m.ms = npu_modeled_time(counts, t).total_us / 1000;
  return m;
}

Measurement GroupTimer::compile_and_model(const NpuTarget& t, const NpuScheduleParams& p, bool check) {
  std::unique_ptr<GroupKernel> k =
      compile_group_kernel(g_, grp_, {HostScheduleParams{}, ScheduleSource::NpuTile, &t, p});
  return run_npu(*k, t, check);
}

Measurement GroupTimer::model_npu_default(const NpuTarget& t) { return compile_and_model(t, {}, false); }

Measurement GroupTimer::model_npu(const NpuTarget& t, const NpuScheduleParams& p) {
  try {
    return compile_and_model(t, p, true);
  } catch (const std::exception& e) {
    Measurement m;
    m.problem = e.what();
    return m;
  }
}

std::vector<double> GroupTimer::time_runs(GroupKernel& k, int runs) {
  std::vector<Tensor> outs = output_buffers(k);
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    k.run(input_ptrs_, outs);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return t;
}

std::pair<double, double> GroupTimer::confirm(const HostScheduleParams& a, const HostScheduleParams& b, int rounds) {
  std::unique_ptr<GroupKernel> ka = compile_group_kernel(g_, grp_, {a}), kb = compile_group_kernel(g_, grp_, {b});
  time_runs(*ka, 1);  // warm-up
  time_runs(*kb, 1);
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    for (double x : time_runs(*ka, repeat_)) ta.push_back(x);
    for (double x : time_runs(*kb, repeat_)) tb.push_back(x);
  }
  return {median(ta), median(tb)};
}

Measurement GroupTimer::measure_default(const HostScheduleParams& defaults) {
  std::unique_ptr<GroupKernel> k = compile_group_kernel(g_, grp_, {defaults});
  return run(*k, false);
}

Measurement GroupTimer::measure(const HostScheduleParams& params, ScheduleSource source) {
  std::unique_ptr<GroupKernel> k;
  try {
    k = compile_group_kernel(g_, grp_, {params, source});
  } catch (const std::exception& e) {
    Measurement m;
    m.problem = e.what();
    return m;
  }
  try {
    return run(*k, true);
  } catch (const std::exception& e) {
    Measurement m;
    m.problem = e.what();
    return m;
  }
}

}  // namespace gaf::tune
