#include "schedules/npu_tiles.h"

#include "schedules/row_schedule.h"

#include <Halide.h>

#include <algorithm>

namespace gaf {

using namespace Halide;

namespace {

int64_t align_up(int64_t bytes, int64_t align) { return align > 0 ? (bytes + align - 1) / align * align : bytes; }

std::string kb(int64_t bytes) {
  return bytes % 1024 == 0 ? std::to_string(bytes / 1024) + " KB" : std::to_string(bytes) + " B";
}

[[noreturn]] void no_fit(const std::string& label, const std::string& buffer, const std::string& what, int64_t need,
                         int64_t capacity) {
  throw GafError(label + " does not fit the NPU target: " + what + " needs " + kb(need) + " of " + buffer +
                 ", but half of " + buffer + " (the other half double-buffers the next tile) is " + kb(capacity / 2));
}

// The largest divisor of `k` not above `limit` (k blocks must divide K: a reduction split is exact).
int64_t largest_divisor(int64_t k, int64_t limit) {
  for (int64_t d = std::min(k, limit); d >= 1; --d)
    if (k % d == 0) return d;
  return 1;
}

// `v` rounded down to a multiple of `step` when it is at least `step`.
int64_t round_down(int64_t v, int64_t step) { return v >= step ? v / step * step : v; }

// A tile extent for an axis of `extent`: all of it if it fits `cap`, else the largest multiple of
// `step` up to `cap` that divides it (no overlapping edge tile, no recomputed cube work) if that
// is at least half of `cap`, else `cap` rounded to `step` (the edge tile shifts inwards).
int64_t tile_extent(int64_t extent, int64_t cap, int64_t step) {
  if (extent <= cap) return extent;
  for (int64_t d = round_down(cap, step); d >= cap / 2 && d >= step; d -= step)
    if (extent % d == 0) return d;
  return round_down(cap, step);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// UB bytes per tile of `inner` x `rows` elements for the Funcs held there, each 32 B aligned.
int64_t ub_bytes(const std::vector<UbResident>& funcs, int64_t inner, int64_t rows, int64_t eb, const NpuTarget& t) {
  int64_t total = 0;
  for (const UbResident& f : funcs)
    total += align_up((f.spans_inner ? inner : 1) * (f.spans_rows ? rows : 1) * eb, t.ub_align_bytes);
  return total;
}

}  // namespace

NpuTileChoice choose_cube_tile(const std::string& label, const Shape& shape, int64_t K,
                               const std::vector<UbResident>& ub_funcs, int64_t eb, const NpuTarget& t,
                               const NpuScheduleParams& p) {
  NpuTileChoice c;
  const int64_t N = shape.back(), M = shape[shape.size() - 2];
  const int64_t batch = shape_numel(Shape(shape.begin(), shape.end() - 2));
  auto l0c = [&](int64_t m, int64_t n) { return align_up(m * n * eb, t.ub_align_bytes); };
  // The epilogue streams the tile out of L0C in blocks of rows: one row of it must fit UB.
  auto fits = [&](int64_t m, int64_t n) {
    return 2 * l0c(m, n) <= t.l0c_bytes && 2 * ub_bytes(ub_funcs, n, 1, eb, t) <= t.ub_bytes;
  };
  // Candidate sides: halving from 8 cube blocks down to one, divisors of the extent preferred.
  auto sides = [](int64_t extent, int64_t step, int64_t override_side) {
    std::vector<int64_t> v;
    if (override_side > 0) return std::vector<int64_t>{std::min(extent, override_side)};  // gaf-tune's
    for (int64_t cap = 8 * step; cap >= step; cap /= 2) {
      int64_t e = tile_extent(extent, cap, step);
      if (v.empty() || v.back() != e) v.push_back(e);
    }
    return v;
  };
  // The modeled time of a tiling: GM traffic (A re-read per column of tiles, B per row of
  // tiles) against the cube's work spread over the cores the tiles occupy. Fewer bytes break ties.
  double best_us = -1, best_bytes = 0;
  for (int64_t n : sides(N, t.cube_n, p.n))
    for (int64_t m : sides(M, t.cube_m, p.m)) {
      if (!fits(m, n)) continue;
      const int64_t tm = ceil_div(M, m), tn = ceil_div(N, n), tiles = tm * tn * batch;
      const double bytes = static_cast<double>(batch * (tn * M * K + tm * K * N + M * N) * eb);
      const double cores = static_cast<double>(std::min<int64_t>(tiles, t.ai_cores));
      const double cube_us = static_cast<double>(batch * tm * m * tn * n * std::max<int64_t>(K, 1)) /
                             (t.cube_fp32_macs_per_cycle * cores * t.clock_ghz * 1e3);
      const double us = std::max(bytes / (t.gm_bandwidth_gbps * 1e3), cube_us);
      if (best_us < 0 || us < best_us || (us == best_us && bytes < best_bytes)) {
        best_us = us;
        best_bytes = bytes;
        c.m = m;
        c.n = n;
      }
    }
  if (best_us < 0) {
    const int64_t m = std::min<int64_t>(M, p.m > 0 ? p.m : t.cube_m);
    const int64_t n = std::min<int64_t>(N, p.n > 0 ? p.n : t.cube_n);
    const std::string tile = p.m > 0 || p.n > 0 ? "the output tile " + std::to_string(m) + "x" + std::to_string(n) +
                                                      " (NPU parameters " + p.str() + ")"
                                                : "the smallest output tile";
    if (2 * l0c(m, n) > t.l0c_bytes) no_fit(label, "L0C", tile, l0c(m, n), t.l0c_bytes);
    no_fit(label, "UB", "the epilogue of " + tile, ub_bytes(ub_funcs, n, m, eb, t), t.ub_bytes);
  }
  for (int64_t r = c.m; r >= 1; --r)  // the most rows of the tile UB holds, dividing the tile
    if (c.m % r == 0 && 2 * ub_bytes(ub_funcs, c.n, r, eb, t) <= t.ub_bytes) {
      c.ub_rows = r;
      break;
    }
  if (K > 0) {
    int64_t limit = std::min(t.l0a_bytes / 2 / (c.m * eb), t.l0b_bytes / 2 / (c.n * eb));
    if (limit < 1)
      no_fit(label, c.m > c.n ? "L0A" : "L0B", "one k step", std::max(c.m, c.n) * eb,
             std::min(t.l0a_bytes, t.l0b_bytes));
    int64_t panel = t.l1_bytes / 2 / ((c.m + c.n) * eb);
    if (p.k_l1 > 0) {
      // gaf-tune's panel: it must split K exactly and fit L1; the L0 block then divides it.
      if (K % p.k_l1 != 0)
        throw GafError(label + ": NPU parameter k_l1=" + std::to_string(p.k_l1) +
                       " does not divide K=" + std::to_string(K) + " (k panels split the reduction exactly)");
      if (p.k_l1 > panel)
        no_fit(label, "L1", "a k panel of " + std::to_string(p.k_l1) + " (NPU parameter k_l1) of both operands",
               (c.m + c.n) * p.k_l1 * eb, t.l1_bytes);
      c.k_l1 = p.k_l1;
      c.k_l0 = largest_divisor(c.k_l1, limit);
    } else {
      c.k_l0 = largest_divisor(K, limit);
      if (panel < c.k_l0) no_fit(label, "L1", "one k block of both operands", (c.m + c.n) * c.k_l0 * eb, t.l1_bytes);
      c.k_l1 = c.k_l0;
      for (int64_t k = c.k_l0; k <= std::min(K, panel); k += c.k_l0)
        if (K % k == 0) c.k_l1 = k;
    }
  }
  c.describe = "cube tiles " + std::to_string(c.m) + "x" + std::to_string(c.n) + " in L0C, k " +
               std::to_string(c.k_l0) + " per L0A/L0B block, " + std::to_string(c.k_l1) + " per L1 panel (" +
               std::to_string(ceil_div(M, c.m) * ceil_div(N, c.n) * batch) + " tiles), epilogue in UB " +
               std::to_string(c.ub_rows) + " rows at a time";
  return c;
}

NpuTileChoice choose_row_tile(const std::string& label, const Shape& shape, bool whole_rows,
                              const std::vector<UbResident>& ub_funcs, int64_t eb, const NpuTarget& t,
                              const NpuScheduleParams& p) {
  NpuTileChoice c;
  const int64_t L = shape.back();
  const int64_t S2 = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  const int64_t outer = shape.size() >= 2 ? shape_numel(Shape(shape.begin(), shape.end() - 2)) : 1;
  const int64_t align = std::max<int64_t>(1, t.ub_align_bytes / eb);
  auto fits = [&](int64_t inner, int64_t rows) { return 2 * ub_bytes(ub_funcs, inner, rows, eb, t) <= t.ub_bytes; };
  const bool split_rows = shape.size() == 1 || !fits(L, 1);
  if (split_rows && whole_rows)
    no_fit(label, "UB",
           "one row of " + std::to_string(L) + " elements (reduced whole, in " + std::to_string(ub_funcs.size()) +
               " UB buffers)",
           ub_bytes(ub_funcs, L, 1, eb, t), t.ub_bytes);
  if (split_rows) {
    // Chunks of the innermost axis: as large as fit, but no larger than a core's share.
    const int64_t share = std::max(align, ceil_div(ceil_div(L * outer * S2, t.ai_cores), align) * align);
    c.chunk = std::min(L, p.chunk > 0 ? p.chunk : share);
    while (p.chunk == 0 && c.chunk > align && !fits(c.chunk, 1))
      c.chunk = std::max(align, (c.chunk / 2) / align * align);
    if (!fits(c.chunk, 1))
      no_fit(label, "UB",
             p.chunk > 0 ? "a chunk of " + std::to_string(c.chunk) + " elements (NPU parameter chunk)"
                         : "the smallest chunk",
             ub_bytes(ub_funcs, c.chunk, 1, eb, t), t.ub_bytes);
    c.rows = 1;
    c.describe = "tiles of " + std::to_string(c.chunk) + " elements of rows of " + std::to_string(L) + " (" +
                 std::to_string(ceil_div(L, c.chunk) * S2 * outer) + " tiles";
  } else {
    const int64_t share = std::max<int64_t>(1, S2 * outer / t.ai_cores);  // rows per core
    c.rows = std::min(S2, p.rows > 0 ? p.rows : share);
    while (p.rows == 0 && c.rows > 1 && !fits(L, c.rows)) c.rows = std::max<int64_t>(1, c.rows / 2);
    if (!fits(L, c.rows))  // only an override can get here: one row fits (split_rows is false)
      no_fit(label, "UB", std::to_string(c.rows) + " rows of " + std::to_string(L) + " elements (NPU parameter rows)",
             ub_bytes(ub_funcs, L, c.rows, eb, t), t.ub_bytes);
    c.describe = "tiles of " + std::to_string(c.rows) + " rows x " + std::to_string(L) + " (" +
                 std::to_string(ceil_div(S2, c.rows) * outer) + " tiles";
  }
  c.describe += ", " + std::to_string(ub_funcs.size()) + " UB buffers)";
  return c;
}

NpuTileLevels apply_cube_tile(Func gm, const NpuTileChoice& c) {
  std::vector<Var> a = gm.args();
  Var no(gm.name() + "_no"), mo(gm.name() + "_mo"), ni(gm.name() + "_ni"), mi(gm.name() + "_mi");
  Var ub(gm.name() + "_ub"), ui(gm.name() + "_ui");
  gm.compute_root();
  gm.tile(a[0], a[1], no, mo, ni, mi, static_cast<int>(c.n), static_cast<int>(c.m), TailStrategy::ShiftInwards);
  gm.split(mi, ub, ui, static_cast<int>(c.ub_rows), TailStrategy::ShiftInwards);  // ub_rows divides m
  std::vector<VarOrRVar> order{ni, ui, ub, no, mo};
  for (size_t i = 2; i < a.size(); ++i) order.emplace_back(a[i]);
  gm.reorder(order);
  if (c.n >= 16) gm.vectorize(ni, 16, TailStrategy::GuardWithIf);
  std::vector<Var> outer{mo};
  for (size_t i = 2; i < a.size(); ++i) outer.push_back(a[i]);
  return NpuTileLevels{LoopLevel(gm, fuse_parallel(gm, no, outer)), LoopLevel(gm, ub)};
}

LoopLevel apply_row_tile(Func gm, const NpuTileChoice& c) {
  std::vector<Var> a = gm.args();
  gm.compute_root();
  if (a.empty()) return LoopLevel::root();
  if (c.chunk > 0) {
    Var o(gm.name() + "_co"), i(gm.name() + "_ci");
    gm.split(a[0], o, i, static_cast<int>(c.chunk), TailStrategy::ShiftInwards);
    if (c.chunk >= 16) gm.vectorize(i, 16, TailStrategy::GuardWithIf);
    return LoopLevel(gm, fuse_parallel(gm, o, std::vector<Var>(a.begin() + 1, a.end())));
  }
  Var o(gm.name() + "_ro"), i(gm.name() + "_ri");
  gm.split(a[1], o, i, static_cast<int>(c.rows), TailStrategy::ShiftInwards);
  gm.reorder(std::vector<VarOrRVar>{a[0], i, o});
  gm.vectorize(a[0], 16, TailStrategy::GuardWithIf);
  return LoopLevel(gm, fuse_parallel(gm, o, std::vector<Var>(a.begin() + 2, a.end())));
}

}  // namespace gaf
