#include "apps/gaf-tune/npu_search_space.h"

#include <algorithm>

#include "fusion/ops/registry.h"

namespace gaf::tune {

namespace {

// 0, then `step` doubling while below `extent`, then `extent` itself.
std::vector<int64_t> doubling(int64_t step, int64_t extent) {
  std::vector<int64_t> v{0};
  for (int64_t x = step; x < extent; x *= 2) v.push_back(x);
  if (extent > 0) v.push_back(extent);
  return v;
}

// 0, then the divisors of K that are whole cube k blocks (or K itself).
std::vector<int64_t> panels(int64_t K, int64_t block) {
  std::vector<int64_t> v{0};
  for (int64_t d = block; d <= K; d += block)
    if (K % d == 0) v.push_back(d);
  if (v.back() != K && K > 0) v.push_back(K);
  return v;
}

const Node* first_matmul(const Graph& g, const FusionGroup& grp) {
  for (int n : grp.nodes)
    if (OpRegistry::global().get(g.nodes()[n]).op_class == OpClass::MatMul) return &g.nodes()[n];
  return nullptr;
}

}  // namespace

NpuSearchSpace::NpuSearchSpace(const Graph& g, const FusionGroup& grp, const NpuTarget& t) {
  if (const Node* mm = first_matmul(g, grp)) {
    const Shape out = g.value(mm->outputs[0]).type.shape();
    const Shape a = g.value(mm->inputs[0]).type.shape();
    if (out.size() < 2 || a.size() < 2) return;  // a matrix-vector product: nothing to tile
    const bool trans_a = mm->op_type == "Gemm" && mm->attrs.get_int("transA", 0) != 0;
    const int64_t K = trans_a ? a[a.size() - 2] : a.back();
    m_ = doubling(t.cube_m, out[out.size() - 2]);
    n_ = doubling(t.cube_n, out.back());
    k_l1_ = panels(K, t.cube_k);
    return;
  }
  if (grp.outputs.empty()) return;
  const Shape out = g.value(grp.outputs[0]).type.shape();
  if (out.empty()) return;
  const int64_t L = out.back(), S2 = out.size() >= 2 ? out[out.size() - 2] : 1;
  if (S2 > 1) rows_ = doubling(1, S2);
  // Rows are split into chunks only when one row (in a few UB buffers, double-buffered) is a
  // large part of UB, or the tensor has one axis.
  if (out.size() == 1 || L * 4 * 8 > t.ub_bytes) chunk_ = doubling(t.ub_align_bytes / 4 * 32, L);
}

NpuScheduleParams NpuSearchSpace::random(std::mt19937& rng) const {
  auto pick = [&](const std::vector<int64_t>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  return NpuScheduleParams{pick(m_), pick(n_), pick(k_l1_), pick(rows_), pick(chunk_)};
}

std::vector<NpuScheduleParams> NpuSearchSpace::neighbours(const NpuScheduleParams& p) const {
  std::vector<NpuScheduleParams> out;
  auto vary = [&](const std::vector<int64_t>& grid, int64_t NpuScheduleParams::*field) {
    auto it = std::find(grid.begin(), grid.end(), p.*field);
    std::vector<int64_t> steps;
    if (it == grid.end())
      steps = grid;  // off the grid (an older entry): any grid value is a step
    else {
      if (it != grid.begin()) steps.push_back(*(it - 1));
      if (it + 1 != grid.end()) steps.push_back(*(it + 1));
    }
    for (int64_t x : steps) {
      NpuScheduleParams n = p;
      n.*field = x;
      if (!(n == p)) out.push_back(n);
    }
  };
  vary(m_, &NpuScheduleParams::m);
  vary(n_, &NpuScheduleParams::n);
  vary(k_l1_, &NpuScheduleParams::k_l1);
  vary(rows_, &NpuScheduleParams::rows);
  vary(chunk_, &NpuScheduleParams::chunk);
  return out;
}

}  // namespace gaf::tune
