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

}  // namespace

GroupTimer::GroupTimer(const Graph& g, const FusionGroup& grp, uint32_t seed, int repeat)
    : g_(g), grp_(grp), repeat_(std::max(1, repeat)) {
  std::mt19937 rng(seed);
  for (const std::string& in : grp.inputs) {
    const Value& v = g.value(in);
    inputs_.push_back(v.constant ? *v.constant : random_like(v.type, rng));
  }
}

Measurement GroupTimer::run(GroupKernel& k, bool check) {
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs_) ins.push_back(&t);
  std::vector<Tensor> outs;
  for (const TensorDesc& d : k.output_descs()) outs.push_back(Tensor::uninitialized(d.dtype, d.shape));
  Measurement m;
  k.run(ins, outs);  // warm-up, and the outputs checked
  if (check) {
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string bad = mismatch(outs[i], expected_.at(i));
      if (!bad.empty()) {
        m.problem = "output " + grp_.outputs[i] + ": " + bad;
        return m;
      }
    }
  } else {
    expected_ = outs;
  }
  std::vector<double> t = time_runs(k, repeat_);
  std::sort(t.begin(), t.end());
  m.ok = true;
  m.ms = t[t.size() / 2];
  return m;
}

std::vector<double> GroupTimer::time_runs(GroupKernel& k, int runs) {
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs_) ins.push_back(&t);
  std::vector<Tensor> outs;
  for (const TensorDesc& d : k.output_descs()) outs.push_back(Tensor::uninitialized(d.dtype, d.shape));
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    k.run(ins, outs);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return t;
}

std::pair<double, double> GroupTimer::confirm(const HostScheduleParams& a, const HostScheduleParams& b, int rounds) {
  std::unique_ptr<GroupKernel> ka = compile_group_kernel(g_, grp_, a), kb = compile_group_kernel(g_, grp_, b);
  time_runs(*ka, 1);  // warm-up
  time_runs(*kb, 1);
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    for (double x : time_runs(*ka, repeat_)) ta.push_back(x);
    for (double x : time_runs(*kb, repeat_)) tb.push_back(x);
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

Measurement GroupTimer::measure_default(const HostScheduleParams& defaults) {
  std::unique_ptr<GroupKernel> k = compile_group_kernel(g_, grp_, defaults);
  return run(*k, false);
}

Measurement GroupTimer::measure(const HostScheduleParams& params, ScheduleSource source) {
  std::unique_ptr<GroupKernel> k;
  try {
    k = compile_group_kernel(g_, grp_, params, source);
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
