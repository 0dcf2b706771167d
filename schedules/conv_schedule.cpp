#include "schedules/conv_schedule.h"

#include <algorithm>

#include "schedules/row_schedule.h"

namespace gaf {

using namespace Halide;

namespace {

// The largest divisor of `n` within `most` (1 at worst): tiles that divide the axis exactly.
int divisor_tile(int64_t n, int most) {
  for (int r = static_cast<int>(std::min<int64_t>(most, n)); r > 1; --r)
    if (n % r == 0) return r;
  return 1;
}

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

int64_t const_extent(const RVar& r) {
  const int64_t* e = as_const_int(r.extent());
  return e ? *e : 1;
}

// The flat operand x (args (q, phase, c, n)) a row of the pitch at a time: dense copies away
// from the border. At root (unless `placed`) in parallel tasks of whole (phase, channel, image)
// planes of about `plane` elements each, at least ~32K elements a task (one task per plane was
// 2048 tasks of 8 rows for a strided 3x3 over 14x14x512: 0.5 ms of the pool's per-task cost).
void schedule_flat_operand(Func x, int64_t pitch, int64_t plane, bool placed, const HostScheduleParams& p) {
  const std::vector<Var> xa = x.args();
  Var qy(x.name() + "_qy"), qx(x.name() + "_qx");
  x.align_bounds(xa[0], static_cast<int>(pitch))
      .split(xa[0], qy, qx, static_cast<int>(pitch), TailStrategy::RoundUp)
      .vectorize(qx, p.lanes, TailStrategy::GuardWithIf);
  if (placed) return;
  Var planes(x.name() + "_planes"), task(x.name() + "_task"), in_task(x.name() + "_in_task");
  const int per_task = static_cast<int>(std::max<int64_t>(1, 32768 / std::max<int64_t>(1, plane)));
  x.compute_root().fuse(xa[1], xa[2], planes).fuse(planes, xa[3], planes);
  if (per_task > 1) {
    x.split(planes, task, in_task, per_task, TailStrategy::GuardWithIf).parallel(task);
  } else {
    x.parallel(planes);
  }
}

// The output f (args (x, y, o, n)) of a flat Conv at root in parallel tasks of (block of `rows`
// rows when `blocks` > 1, `channels` channels, image), vectorised along x (a row narrower than a
// vector: the narrowest vector that covers it, stores guarded); returns the task loop.
Var flat_output_tasks(Func f, int64_t rows, int64_t blocks, int channels, int64_t width, const HostScheduleParams& p) {
  const std::vector<Var> a = f.args();
  Var yo(f.name() + "_yo"), yi(f.name() + "_yi"), oo(f.name() + "_oo"), oi(f.name() + "_oi");
  f.compute_root();
  if (blocks > 1) f.split(a[1], yo, yi, static_cast<int>(rows), TailStrategy::ShiftInwards);
  f.split(a[2], oo, oi, channels);
  int lanes = p.lanes;
  while (lanes > 4 && lanes / 2 >= width) lanes /= 2;
  f.vectorize(a[0], lanes, width >= lanes ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{a[0], blocks > 1 ? yi : a[1], oi, oo};
  if (blocks > 1) order.emplace_back(yo);
  order.emplace_back(a[3]);
  f.reorder(order);
  std::vector<Var> outer;
  if (blocks > 1) outer.push_back(yo);
  outer.push_back(a[3]);
  return fuse_parallel(f, oo, outer);
}

// The register tile of a flat Conv over `span` positions: `vectors` whole vectors along p x
// `channels` output channels, chosen so the tiles covering the span waste the fewest lanes and fill
// the accumulator registers (a single vector, one weight broadcast per FMA, a little less);
// `within_span`: no wider than the span (a tile must fit inside it).
struct FlatTile {
  int vectors = 1, channels = 1;
};

FlatTile flat_tile(int64_t span, int64_t out_channels, bool within_span, const HostScheduleParams& p) {
  const int budget = std::max(1, p.matmul.vectors * p.matmul.rows);
  FlatTile best_tile;
  double best = -1;
  for (int v = 1; v <= 4; ++v) {
    const int to = divisor_tile(out_channels, std::max(1, budget / v));
    const int64_t tile = int64_t{v} * p.lanes;
    if (within_span && tile > span && v > 1) break;
    const double score = static_cast<double>(span) / round_up(span, tile) * std::min(1.0, double(v * to) / budget) *
                         (v == 1 ? 0.9 : 1.0);
    if (score > best + 1e-9) best = score, best_tile = {v, to};
  }
  return best_tile;
}

// An exact flat Conv (FlatLayout::exact: a 1x1 Conv without padding, a GEMM of W [O, C] by X
// [C, H*W], X read in place at unit stride, else its subsampled copy computed once at root).
// Tasks of (block of output rows, chunk of channels whose weights stay in L2); per task, tile by
// tile along the block's positions (the last shifted inwards: positions computed twice, stored the
// same, never past the block, so never past X) and per register tile of channels within it, the
// accumulators are initialised, reduced over the input channels and stored in one go, the tile's
// X slice reused from cache by every channel tile. ResNet-50's 1x1 Convs at 56x56: 125-170 ->
// 300 GFLOP/s, the copy gone.
bool schedule_exact_conv(const TensorFunc& out, const Stage& acc, const Stage* input, const HostScheduleParams& p) {
  Func f = out.func, c = acc.func;
  const std::vector<Var> a = f.args(), ca = c.args();  // (x, y, o, n), (p, o, n)
  const int64_t pitch = acc.flat.pitch, height = out.shape[2], width = out.shape[3], channels = out.shape[1];
  const int64_t images = out.shape[0];
  int64_t in_channels = 1;
  for (const RVar& r : acc.reduction) in_channels *= const_extent(r);
  // Channels per task: as many as keep their weights within ~128 KB.
  const FlatTile whole = flat_tile(height * pitch, channels, true, p);
  int task_o = whole.channels;
  for (int64_t t = whole.channels; t <= channels; t += whole.channels)
    if (channels % t == 0 && t * in_channels * 4 <= 128 * 1024) task_o = static_cast<int>(t);
  // Rows per block: about 16 tasks for the threads, each block at least a few tiles long.
  const int64_t chunks = channels / task_o * images;
  int64_t rows = std::clamp<int64_t>(height * chunks / 16, 1, height);
  rows = std::max<int64_t>(rows, std::min<int64_t>(height, (4 * whole.vectors * p.lanes + pitch - 1) / pitch));
  const int64_t blocks = (height + rows - 1) / rows;
  rows = (height + blocks - 1) / blocks;  // balanced blocks
  const int64_t span = rows * pitch;
  const FlatTile tile = flat_tile(span, task_o, true, p);
  const int tile_p = tile.vectors * p.lanes;
  if (tile_p > span) return false;  // an image smaller than one tile (FlatLayout::exact excludes it)

  const Var task = flat_output_tasks(f, rows, blocks, task_o, width, p);

  // The block's accumulators, stored tile by tile; each tile's own accumulation in registers.
  Func block = c.in();
  const std::vector<Var> ba = block.args();
  Var po(c.name() + "_po"), pi(c.name() + "_pi"), co(c.name() + "_co"), ci(c.name() + "_ci");
  block.compute_at(f, task)
      .split(ba[0], po, pi, tile_p, TailStrategy::ShiftInwards)
      .split(ba[1], co, ci, tile.channels)
      .reorder(pi, ci, co, po, ba[2])
      .vectorize(pi, p.lanes)
      .unroll(pi)
      .unroll(ci);
  c.compute_at(block, co).vectorize(ca[0], p.lanes).unroll(ca[0]).unroll(ca[1]);
  Halide::Stage u = c.update();
  std::vector<VarOrRVar> uorder{ca[0], ca[1]};
  for (auto r = acc.reduction.rbegin(); r != acc.reduction.rend(); ++r) uorder.emplace_back(*r);
  uorder.emplace_back(ca[2]);
  u.reorder(uorder).vectorize(ca[0], p.lanes).unroll(ca[0]).unroll(ca[1]);
  if (input && !acc.flat.in_place) schedule_flat_operand(input->func, pitch, height * pitch, false, p);
  return true;
}

// The flat form (Stage::flat, fusion/ops/conv.cpp): the accumulator acc(p, o, n) as a GEMM
// tile over (p, o) per block of output rows and channel tile, then `out` (the Conv's output or its
// epilogue, args (x, y, o, n)) reads it at p = y * pitch + x. Where the operand outweighs the
// weights, a block's rows are as many as keep its operand slice (input channels x phases x rows x
// pitch) within ~256 KB, so every channel tile re-reads it from L2; the register tile (vectors x
// channels) is chosen so the block's span wastes the fewest lanes. Exact ones: schedule_exact_conv.
bool schedule_flat_conv(const TensorFunc& out, const Stage& acc, const Stage* input, const HostScheduleParams& p) {
  if (out.rank() != 4 || acc.func.dimensions() != 3 || acc.reduction.empty()) return false;
  if (acc.flat.exact) return schedule_exact_conv(out, acc, input, p);
  Func f = out.func, c = acc.func;
  const std::vector<Var> a = f.args(), ca = c.args();  // (x, y, o, n), (p, o, n)
  const int64_t pitch = acc.flat.pitch, height = out.shape[2], width = out.shape[3], channels = out.shape[1];
  // An output row reads a row of each phase (a strided Conv's rows of the input).
  const int64_t slice_row_bytes = const_extent(acc.reduction[0]) * acc.flat.phases * pitch * 4;
  int64_t weight_bytes = channels * 4;
  for (const RVar& r : acc.reduction) weight_bytes *= const_extent(r);
  // Each block streams all the weights once: blocks only where the weights are the smaller
  // (ResNet-50's last 1x1/2: 8 MB of weights over 7x7 pixels in 4 blocks ran at 64 GFLOP/s).
  int64_t rows =
      weight_bytes >= slice_row_bytes * height ? height : std::clamp<int64_t>(256 * 1024 / slice_row_bytes, 1, height);
  const int64_t blocks = (height + rows - 1) / rows;
  rows = (height + blocks - 1) / blocks;  // balanced blocks
  const int64_t span = rows * pitch;
  const FlatTile tile = flat_tile(span, channels, false, p);
  const int tile_o = tile.channels, tile_p = tile.vectors * p.lanes;

  const Var task = flat_output_tasks(f, rows, blocks, tile_o, width, p);

  // Per task: the block's span of p (rounded up to whole tiles: the tail reads the operand's
  // zeros past X) for tile_o channels, each tile's accumulators in registers over the reduction.
  Var po(c.name() + "_po"), pi(c.name() + "_pi");
  c.compute_at(f, task);
  c.bound_extent(ca[0], static_cast<int>(round_up(span, tile_p))).bound_extent(ca[1], tile_o);
  c.split(ca[0], po, pi, tile_p).reorder(pi, ca[1], po).vectorize(pi, p.lanes).unroll(pi).unroll(ca[1]);
  Halide::Stage u = c.update();
  u.split(ca[0], po, pi, tile_p);
  std::vector<VarOrRVar> uorder{pi, ca[1]};
  for (auto r = acc.reduction.rbegin(); r != acc.reduction.rend(); ++r) uorder.emplace_back(*r);
  uorder.emplace_back(po);
  uorder.emplace_back(ca[2]);
  u.reorder(uorder).vectorize(pi, p.lanes).unroll(pi).unroll(ca[1]);

  if (input) {
    // Where a channel tile covers whole groups (depthwise), its inputs are read by it alone: copied
    // per task, into cache, rather than once at root through memory (MobileNetV2's 112x112 depthwise
    // at stride 2 0.84 -> 0.19 ms).
    const bool per_task =
        acc.flat.group_outputs > 0 && tile_o % acc.flat.group_outputs == 0 && acc.flat.group_outputs < channels;
    if (per_task) Func(input->func).compute_at(f, task);
    schedule_flat_operand(input->func, pitch, height * pitch, per_task, p);
  }
  return true;
}

}  // namespace

bool schedule_conv_tiles(const TensorFunc& out, const Stage& acc, const Shape& acc_shape, const Stage* input,
                         const HostScheduleParams& p) {
  const int rank = out.rank();
  // Static extents only: the tiles' tail strategies are chosen from them (a dynamic dim's
  // representative width could exceed the run's, and a shifted tile would start before 0).
  if (rank < 3 || !out.is_static() || out.shape != acc_shape || acc.reduction.empty()) return false;
  if (acc.flat.pitch > 0) return schedule_flat_conv(out, acc, input, p);
  Func f = out.func, c = acc.func;
  std::vector<Var> a = f.args(), ca = c.args();  // (x, [y, more spatial...], o, n)
  const int64_t width = out.shape.back(), channels = out.shape[1];
  const bool has_y = rank >= 4;
  const int64_t height = has_y ? out.shape[rank - 2] : 1;
  const int budget = std::max(1, p.matmul.vectors * p.matmul.rows);  // accumulator registers
  // Along x whole vectors, up to p.matmul.vectors of them; a short row (7 or 14 pixels late in a
  // CNN) one vector of the smallest width that covers it, and several rows (y) per tile instead,
  // so each broadcast weight still serves several vectors.
  int lanes = p.lanes;
  while (lanes > 4 && lanes / 2 >= width) lanes /= 2;
  const int vectors = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(p.matmul.vectors, width / lanes)));
  const int tile_x = vectors * lanes;
  const int tile_y = has_y && vectors == 1 ? static_cast<int>(std::min<int64_t>({height, 4, budget})) : 1;
  const int tile_o = divisor_tile(channels, std::max(1, budget / (vectors * tile_y)));

  Var xo(f.name() + "_xo"), xi(f.name() + "_xi"), yo(f.name() + "_yo"), yi(f.name() + "_yi");
  Var oo(f.name() + "_oo"), oi(f.name() + "_oi");
  f.compute_root();
  // A row at least a tile wide: the last tile shifts inwards (pixels computed twice, stored the
  // same). A shorter row: one tile, its stores guarded; the accumulator computes the whole tile
  // (the Conv clamps its reads into X).
  const bool whole_x = width >= tile_x;
  f.split(a[0], xo, xi, tile_x, whole_x ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf);
  if (tile_y > 1) f.split(a[1], yo, yi, tile_y, TailStrategy::ShiftInwards);
  f.split(a[rank - 2], oo, oi, tile_o);
  std::vector<VarOrRVar> order{xi};
  if (tile_y > 1) order.emplace_back(yi);
  order.emplace_back(oi);
  order.emplace_back(xo);
  // The tile loops above x, fastest first: rows and the other spatial axes, channel tiles,
  // images — or the channel tiles first when the Conv's weights are smaller than its input, so
  // the input rows a tile reads stay in cache for every channel tile instead of the whole
  // input streaming once per channel tile (ResNet-50's 1x1 Convs at 56x56: 3.2 MB of input,
  // 64 KB of weights). With more weights than input (late stages: 9.4 MB of 3x3 weights over
  // 7x7 pixels) one channel tile's weights stay in cache over all rows instead.
  int64_t weights = channels, input_elems = 1;
  for (const RVar& r : acc.reduction)
    if (const int64_t* e = as_const_int(r.extent())) weights *= *e;
  if (const int64_t* e = as_const_int(acc.reduction[0].extent())) input_elems = *e;  // input channels per group
  for (int d = 2; d < rank; ++d) input_elems *= out.shape[d];
  std::vector<Var> outer;
  if (weights <= input_elems) outer.push_back(oo);
  if (has_y) outer.push_back(tile_y > 1 ? yo : a[1]);
  for (int d = 2; d < rank - 2; ++d) outer.push_back(a[d]);
  if (weights > input_elems) outer.push_back(oo);
  outer.push_back(a[rank - 1]);
  for (const Var& v : outer) order.emplace_back(v);
  f.reorder(order);
  f.vectorize(xi, lanes, TailStrategy::GuardWithIf).unroll(xi).unroll(oi);
  if (tile_y > 1) f.unroll(yi);
  fuse_parallel(f, outer[0], std::vector<Var>(outer.begin() + 1, outer.end()));

  // The accumulator per tile: init and every reduction step on the tile's registers.
  c.compute_at(f, xo);
  c.bound_extent(ca[0], tile_x);
  c.vectorize(ca[0], lanes).unroll(ca[0]).unroll(ca[rank - 2]);
  if (tile_y > 1) c.bound_extent(ca[1], tile_y).unroll(ca[1]);
  Halide::Stage u = c.update();
  std::vector<VarOrRVar> uorder{ca[0]};
  if (tile_y > 1) uorder.emplace_back(ca[1]);
  uorder.emplace_back(ca[rank - 2]);
  // The kernel window innermost (neighbouring input pixels), the input channels outside it.
  for (auto r = acc.reduction.rbegin(); r != acc.reduction.rend(); ++r) uorder.emplace_back(*r);
  for (int d = tile_y > 1 ? 2 : 1; d < rank - 2; ++d) uorder.emplace_back(ca[d]);
  uorder.emplace_back(ca[rank - 1]);
  u.reorder(uorder);
  u.vectorize(ca[0], lanes).unroll(ca[0]).unroll(ca[rank - 2]);
  if (tile_y > 1) u.unroll(ca[1]);

  if (input) {  // once, at root: rows vectorised, parallel over its outer axes
    Func x = input->func;
    std::vector<Var> xa = x.args();
    x.compute_root().vectorize(xa[0], p.lanes, TailStrategy::GuardWithIf);
    fuse_parallel(x, xa[1], std::vector<Var>(xa.begin() + 2, xa.end()));
  }
  return true;
}

}  // namespace gaf
