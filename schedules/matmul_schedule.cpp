#include "schedules/matmul_schedule.h"

#include <algorithm>
#include <optional>
#include <cstdlib>

namespace gaf {

using namespace Halide;

MatMulTile choose_matmul_tile(int64_t M, int64_t N, const HostScheduleParams& p) {
  MatMulTile t;
  t.lanes = p.lanes;
  t.rows = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(p.matmul.rows, M)));
  if (N < p.lanes) {
    t.width = static_cast<int>(N);  // one narrow vector
    t.lanes = t.width;
    return t;
  }
  int max_v = static_cast<int>(std::min<int64_t>(p.matmul.vectors, N / p.lanes));
  if (N % (max_v * p.lanes) == 0) {
    t.width = max_v * p.lanes;
    return t;
  }
  // p.vectors does not divide N (attention: N = 64, 128, 512 with 3 vectors of 16): of the
  // widths up to one vector wider that divide N, take the fewest loads per FMA, (v + r) / (v * r),
  // with the rows cut to keep the accumulators within p.vectors x p.rows registers and rounded
  // down to a power of two (attention's M; 4 x 6 tiles measured 2x slower than 4 x 4 in the
  // scores + Softmax row blocks). Measured at seq 128: probs x V 0.23 -> 0.12 ms, Q x K^T +
  // Softmax 0.20 -> 0.16 ms per layer (2 x 8 before).
  double best = 0;
  const int budget = p.matmul.vectors * p.matmul.rows;
  for (int v = static_cast<int>(std::min<int64_t>(p.matmul.vectors + 1, N / p.lanes)); v >= 1; --v) {
    if (N % (v * p.lanes) != 0) continue;
    int r = 1;
    while (2 * r <= std::min<int64_t>({p.matmul.rows, budget / v, M})) r *= 2;
    double cost = double(v + r) / (v * r);
    if (best == 0 || cost < best) best = cost, t.width = v * p.lanes, t.rows = r;
  }
  if (best == 0) t.width = max_v * p.lanes;  // nothing divides N: shift the last tile inwards
  return t;
}

namespace {

// The accumulator of a MatMul on bf16- or int8-packed B (fusion/ops/matmul.cpp): reduction
// {k groups, group} (pairs of bf16, quads of int8), one dot-product instruction per group.
bool dot_products(const Stage& acc) { return acc.reduction.size() == 2; }

// k steps unrolled in the accumulator loop: p.k_unroll, or by K when it is 0 (see MatMulParams).
int k_unroll(const Stage& acc, const HostScheduleParams& p) {
  const int64_t* kc = as_const_int(acc.reduction[0].extent());
  if (p.matmul.k_unroll != 0) return p.matmul.k_unroll;
  return kc && (*kc >= 2048 || *kc <= 512) ? 4 : 1;
}

// The accumulator as one register block per output tile, computed `at` the tile: init, then the
// whole k loop outside the unrolled rows x vectors.
// `guarded`: the tile's columns are guarded (tile_output's last tile over a padded packed B):
// the accumulator's storage is then bounded to one tile's width — without it Halide computed
// the accumulator's vectors past the storage it allocated for the guarded columns (a heap
// overrun). Not otherwise: an accumulator may span more than t.width (attention's runs).
void accumulate_per_tile(const Placement& at, const Stage& acc, const MatMulTile& t, const HostScheduleParams& p,
                         bool guarded = false) {
  Func c = acc.func;
  std::vector<Var> ca = c.args();
  RVar k = acc.reduction[0];
  at.apply(c);
  if (guarded) c.bound_extent(ca[0], t.width);
  c.vectorize(ca[0], t.lanes).unroll(ca[0]);
  Halide::Stage u = c.update();
  std::vector<VarOrRVar> uorder{ca[0], ca[1], k};
  if (dot_products(acc)) uorder.insert(uorder.begin(), acc.reduction[1]);
  for (size_t i = 2; i < ca.size(); ++i) uorder.emplace_back(ca[i]);
  u.reorder(uorder);
  // bf16 pairs: the pair axis vectorised inside the columns makes each k step a 2-lane
  // VectorReduce of f32(bf16) products per column, which Halide lowers to one vdpbf16ps per
  // vector of columns (AVX512_SapphireRapids targets). atomic(): the pair's two products
  // go into the same accumulator lane.
  if (dot_products(acc)) u.atomic().vectorize(acc.reduction[1]);
  u.vectorize(ca[0], t.lanes).unroll(ca[0]);
  if (t.rows > 1) {  // one row (one decoded token) has nothing to unroll
    c.unroll(ca[1]);
    u.unroll(ca[1]);
  }
  const int64_t* kc = as_const_int(k.extent());
  int ku = k_unroll(acc, p);
  if (ku > 1 && kc && *kc % ku == 0) {
    RVar ko(k.name() + "_o"), ki(k.name() + "_i");
    u.split(k, ko, ki, ku).unroll(ki);
  }
}

// The accumulator of a whole N panel, computed at the panel loop: k split into blocks of
// `kb` steps, outermost; inside a block every row tile runs its register block over the block's
// k steps, reading the same kb x width slice of B (hot in L1/L2). Partial sums go back to the
// panel's accumulator (rows x width floats, 24 KB at M = 128) between blocks.
void accumulate_per_panel(Func f, const Var& panel, const Stage& acc, const MatMulTile& t, int kb, bool guarded) {
  Func c = acc.func;
  std::vector<Var> ca = c.args();
  RVar k = acc.reduction[0];
  c.compute_at(f, panel);
  if (guarded) c.bound_extent(ca[0], t.width);  // as accumulate_per_tile
  c.vectorize(ca[0], t.lanes).unroll(ca[0]);
  Halide::Stage u = c.update();
  // Rows in tiles of t.rows; GuardWithIf because an update cannot shift inwards (it would add
  // twice) — the guard only runs when M is not a multiple of the tile height.
  Var mo(ca[1].name() + "_o"), mi(ca[1].name() + "_i");
  RVar ko(k.name() + "_b"), ki(k.name() + "_i");
  u.split(ca[1], mo, mi, t.rows, TailStrategy::GuardWithIf).split(k, ko, ki, kb, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> uorder{ca[0], mi, ki, mo, ko};
  for (size_t i = 2; i < ca.size(); ++i) uorder.emplace_back(ca[i]);
  // No k unrolling here: unrolling the block's k loop by 4 measured 0.66x (the accumulators
  // no longer stay in registers across the loop).
  u.reorder(uorder).vectorize(ca[0], t.lanes).unroll(ca[0]).unroll(mi);
}

// The staged operands computed into dense buffers `at` a loop, where their regions are the
// block that loop's tiles read (see StagedOperands). B in lanes x lanes tiles, vectorised along
// n and unrolled along k, as schedule_transpose (its source is transposed); A row by row,
// vectorised along k (its source rows are dense).
void stage_operands(const StagedOperands& staged, const Placement& at, const HostScheduleParams& p) {
  if (staged.b) {
    at.apply(staged.b->func);
    transpose_tiles(staged.b->func, 1, p.lanes);  // (n, k): k walks the source's innermost axis
  }
  if (staged.a) {
    Func f = staged.a->func;
    at.apply(f);
    f.vectorize(f.args()[0], p.lanes, TailStrategy::GuardWithIf);
  }
}

// Row tiles of `t` per block of A (rows x K floats) that fits MatMulParams::a_block_bytes: at
// least one; 0 when blocking is off (a_block_bytes 0) or K is not positive.
int64_t a_block_tiles(int64_t K, const MatMulTile& t, const HostScheduleParams& p) {
  if (p.matmul.a_block_bytes <= 0 || K <= 0) return 0;
  return std::max<int64_t>(1, p.matmul.a_block_bytes / (K * 4) / t.rows);
}

// `out` split into register tiles (see schedule_matmul_tiles), computed at root; with
// `block_tiles` > 0 the row tiles are grouped in blocks of that many inside each parallel
// iteration (attention's row blocks, `rb`), and the column tiles of one run (a head: `run`
// columns) go inside the block, so what a block computes first serves all of them.
struct OutputTiles {
  Func f;
  Var par, mo, rb;
  MatMulTile t;
  bool blocked = false;  // A row blocks outside the panels (MatMulParams::a_block_bytes)
  bool guarded = false;  // the last column tile is guarded (a padded packed B)
};

std::optional<OutputTiles> tile_output(const TensorFunc& out, const Stage& acc, const HostScheduleParams& p,
                                       int b_panel, int layout_run, int block_tiles) {
  const Var no(out.func.name() + "_no");
  std::vector<Var> a = out.func.args();
  if (a.size() < 2 || acc.reduction.empty()) return std::nullopt;
  int64_t N = out.shape.back(), M = out.shape[out.shape.size() - 2];
  // A row per batch entry against a weight (a packed B has no batch dims): the batch
  // dims are more rows of the same product (the accumulator's row is batch * M + m), so they
  // are fused into the row loop and tiled with it — else each batch entry is a tile of M rows
  // streaming all of B. PyTorch's nn.MultiheadAttention (batch_first) projects its input
  // transposed to [seq, batch, hidden]: at batch 1 that is seq entries of one row (BERT-base
  // size: the QKV projection 6.8 ms against 1.3 for the same product as 128 rows).
  // One row per entry and one batch dim beyond 1 only: the output's args are bounded box by
  // box, so a tile of the fused loop over entries of M > 1 rows (or across two batch dims) asked
  // the accumulator for every row of every entry it touched (ConvNeXt's 7x7 tokens as
  // [1, 7, 7, C]: all 49 rows in one unrolled tile, 10 ms for a 0.8 ms product).
  int batch_dims_beyond_1 = 0;
  for (size_t d = 0; d + 2 < out.shape.size(); ++d) batch_dims_beyond_1 += out.shape[d] > 1;
  if (b_panel > 0 && block_tiles == 0 && layout_run == 0 && a.size() > 2 && out.is_static() && M == 1 &&
      batch_dims_beyond_1 == 1) {
    Var rows(out.func.name() + "_rows");
    Var inner = a[1];
    for (size_t i = 2; i < a.size(); ++i) {
      Var next = i + 1 == a.size() ? rows : Var(out.func.name() + "_rows" + std::to_string(i));
      Func(out.func).fuse(inner, a[i], next);
      M *= out.shape[out.shape.size() - 1 - i];
      inner = next;
    }
    a = {a[0], rows};
  }
  MatMulTile t = choose_matmul_tile(M, layout_run > 0 ? layout_run : N, p);
  if (b_panel > 0) t.width = b_panel;  // the packing chose it from the same parameters
  // Through a layout epilogue a tile must lie within one run (else its accumulator would span
  // two MatMul rows) and start at a multiple of the width (the exact split below).
  if (layout_run > 0 && (layout_run % t.width != 0 || N % t.width != 0)) return std::nullopt;
  const bool exact = b_panel > 0 || layout_run > 0;

  // Output tiles: ShiftInwards keeps every tile full-size (an edge tile overlaps its neighbour;
  // the output is pure so recomputing it is harmless), which keeps the accumulator's extent
  // constant so it can live in registers.
  OutputTiles o;
  o.t = t;
  Func f = o.f = out.func;
  Var ni(f.name() + "_ni"), mi(f.name() + "_mi"), nh(f.name() + "_nh"), nw(f.name() + "_nw");
  o.mo = Var(f.name() + "_mo");
  o.rb = Var(f.name() + "_rb");
  f.compute_root();
  // With packed B the columns split exactly into panels (N is a multiple of the panel width and
  // the group pins output mins to 0), so a tile's column n = no * width + ni and the packed
  // index (n / width, k, n % width) simplifies to (no, k, ni): dense loads. ShiftInwards would
  // start a tile at min(no * width, N - width), which Halide cannot divide: gathers (4x slower).
  // A packed B whose last panel is padded (N not a multiple of the width): the last tile is
  // guarded; the others stay exact.
  const TailStrategy columns = !exact             ? TailStrategy::ShiftInwards
                               : N % t.width != 0 ? TailStrategy::GuardWithIf
                                                  : TailStrategy::RoundUp;
  f.split(a[0], no, ni, t.width, columns);
  o.guarded = columns == TailStrategy::GuardWithIf;
  f.split(a[1], o.mo, mi, t.rows, TailStrategy::ShiftInwards);
  std::vector<VarOrRVar> order{ni, mi, o.mo};
  Var panels = no;  // the column loop outside the rows: all column tiles, or one per run
  if (block_tiles > 0) {
    const int64_t run = layout_run > 0 ? layout_run : N;
    const int per_run = static_cast<int>((run + t.width - 1) / t.width);  // exact with a layout run
    f.split(o.mo, o.rb, o.mo, block_tiles, TailStrategy::GuardWithIf);
    f.split(no, nh, nw, per_run, TailStrategy::RoundUp);
    order.emplace_back(nw);
    order.emplace_back(o.rb);
    panels = nh;
  }
  order.emplace_back(panels);
  // Row blocks of A outside the N panels (see MatMulParams::a_block_bytes).
  const int64_t* kc = as_const_int(acc.reduction[0].extent());
  const int64_t tiles_per_block = kc ? a_block_tiles(*kc, t, p) : 0;
  Var mb(f.name() + "_mb");
  // Only a tall A (more than 4 blocks' worth, e.g. batch 8 x seq 128) is blocked: a short one
  // stays in cache across the panels anyway, and blocking would re-read B once per block.
  int64_t a_bytes = kc ? M * *kc * 4 : 0;
  o.blocked =
      block_tiles == 0 && tiles_per_block > 0 && M > tiles_per_block * t.rows && a_bytes > 4 * p.matmul.a_block_bytes;
  if (o.blocked) {
    f.split(o.mo, mb, o.mo, static_cast<int>(tiles_per_block), TailStrategy::GuardWithIf);
    order.emplace_back(mb);
  }
  for (size_t i = 2; i < a.size(); ++i) order.emplace_back(a[i]);
  f.reorder(order);
  f.vectorize(ni, t.lanes).unroll(ni);
  if (t.rows > 1) f.unroll(mi);  // one row (one decoded token): nothing to unroll
  std::vector<Var> outer;
  if (o.blocked) outer.push_back(mb);
  outer.insert(outer.end(), a.begin() + 2, a.end());
  o.par = fuse_parallel(f, panels, outer);
  return o;
}

// `mm` (a MatMul's output, args (n, row, ...)) in register tiles computed `at` a loop whose
// region is `rows` rows of it, each tile's accumulator `acc` per tile.
void tiles_at(const Placement& at, const TensorFunc& mm, const Stage& acc, int64_t rows, const HostScheduleParams& p) {
  const MatMulTile t = choose_matmul_tile(rows, mm.shape.back(), p);
  Func s = mm.func;
  std::vector<Var> sa = s.args();
  Var no(s.name() + "_no"), so(s.name() + "_mo"), ni(s.name() + "_ni"), si(s.name() + "_mi");
  at.apply(s);
  MatMulTile inner = t;
  inner.rows = std::min<int>(t.rows, static_cast<int>(rows));
  s.tile(sa[0], sa[1], no, so, ni, si, t.width, inner.rows, TailStrategy::ShiftInwards);
  s.reorder(ni, si, so, no).vectorize(ni, t.lanes).unroll(ni);
  if (inner.rows > 1) s.unroll(si);
  accumulate_per_tile(Placement::at(s, so), acc, inner, p);
}

// Query rows per head up to which attention is decode-shaped (see scores_per_key).
constexpr int64_t kDecodeRows = 4;

// Decode attention's scores (a few query rows against a long cache): one dot product per key
// and row, computed `at` the probabilities' block. K is read in place along its rows (the
// prefill path's K^T copy per head would cost more than the whole product: 4 strided passes over
// the cache for one row of Q); each dot product runs its k loop in vectors of lanes (rfactor),
// one accumulator per query row, then sums the lanes. False, nothing scheduled, when K is not a
// constant multiple of the lanes or the update is not one Halide can split.
bool scores_per_key(const Placement& at, const TensorFunc& mm, const Stage& acc, const HostScheduleParams& p) {
  const int64_t* kc = as_const_int(acc.reduction[0].extent());
  if (acc.reduction.size() != 1 || !kc || *kc % p.lanes != 0) return false;
  Func c = acc.func;
  std::vector<Var> ca = c.args();
  RVar ko(acc.reduction[0].name() + "_o"), ki(acc.reduction[0].name() + "_i");
  Var lane(c.name() + "_lane");
  Func part;
  try {
    part = c.update().split(acc.reduction[0], ko, ki, p.lanes).rfactor(ki, lane);
  } catch (const CompileError&) {
    return false;
  }
  Func s = mm.func;
  std::vector<Var> sa = s.args();
  at.apply(s);
  std::vector<VarOrRVar> order{sa[1], sa[0]};  // the rows inside each key: its K row read once
  for (size_t i = 2; i < sa.size(); ++i) order.emplace_back(sa[i]);
  s.reorder(order);
  c.compute_at(s, sa[0]);
  // part's args are acc's (n, row) then lane: lanes innermost in its storage and loops.
  part.compute_at(s, sa[0]).reorder_storage(lane, ca[0], ca[1]).reorder(lane, ca[0], ca[1]).vectorize(lane);
  part.update().reorder(lane, ca[1], ca[0], ko).vectorize(lane).unroll(ca[1]);
  if (*kc / p.lanes <= 8) part.update().unroll(ko);
  return true;
}

}  // namespace

namespace {

// `acc` computed per tile of `o` (or per panel with k blocking), its staged operands at the
// panels and its converted A at root. `whole_panel`: a float accumulator is computed for the
// whole panel at once, k blocked only where K is long (a gated MLP's two accumulators: one
// panel's B at a time in cache, not both).
void accumulate_in_tiles(const OutputTiles& o, const Stage& acc, StagedOperands staged, const HostScheduleParams& p,
                         bool whole_panel = false) {
  staged.a = nullptr;  // per panel it would be copied N / width times
  stage_operands(staged, Placement::at(o.f, o.par), p);
  for (const Stage* s : staged.a_converted) {  // only a dot-product accumulator has them
    // Converted once for all panels (M x K x 2 bytes: 196 KB at BERT's 128 x 768), vectorised,
    // so the register block loads and broadcasts a ready bf16 pair (int8 quad) per row and k step.
    Func a = s->func;
    std::vector<Var> aa = a.args();
    a.compute_root();
    if (aa.size() >= 2) {
      a.vectorize(aa[0], p.lanes, TailStrategy::GuardWithIf).parallel(aa[1], 8);
    } else if (!s->reduction.empty()) {
      // A row's scale: the max over its k in vectors of lanes, then across the lanes.
      RVar ko(s->reduction[0].name() + "_o"), ki(s->reduction[0].name() + "_i");
      Var lane(a.name() + "_lane");
      Func part = a.update().split(s->reduction[0], ko, ki, p.lanes, TailStrategy::GuardWithIf).rfactor(ki, lane);
      part.compute_at(a, aa[0]).vectorize(lane);
      part.update().vectorize(lane);
      a.parallel(aa[0], 8);
    }
  }
  // k blocking: only for a short A (a tall one is row-blocked above) and K of 4 blocks or more
  // (see MatMulParams::k_block).
  const int64_t* kc = as_const_int(acc.reduction[0].extent());
  int kb = p.matmul.k_block;
  // (Not for bf16 pairs: their k steps are K / 2 and the 2-lane reduction stays per tile.)
  const bool floats = !dot_products(acc) && kc;
  const bool k_blocks = floats && kb > 0 && *kc >= 4 * kb;
  if ((k_blocks && !o.blocked) || (floats && whole_panel))
    accumulate_per_panel(o.f, o.par, acc, o.t, k_blocks ? kb : static_cast<int>(*kc), o.guarded);
  else
    accumulate_per_tile(Placement::at(o.f, o.mo), acc, o.t, p, o.guarded);
}

}  // namespace

bool schedule_matmul_tiles(const TensorFunc& out, const Stage& acc, const HostScheduleParams& p, int b_panel,
                           StagedOperands staged, int layout_run) {
  std::optional<OutputTiles> o = tile_output(out, acc, p, b_panel, layout_run, 0);
  if (!o) return false;
  accumulate_in_tiles(*o, acc, staged, p);
  return true;
}

bool schedule_gated_tiles(const TensorFunc& out, const Stage& gate_acc, StagedOperands gate_staged, const Stage& up_acc,
                          StagedOperands up_staged, const HostScheduleParams& p, int b_panel) {
  std::optional<OutputTiles> o = tile_output(out, gate_acc, p, b_panel, 0, 0);
  if (!o) return false;
  accumulate_in_tiles(*o, gate_acc, gate_staged, p, true);
  accumulate_in_tiles(*o, up_acc, up_staged, p, true);
  return true;
}

std::optional<Placement> schedule_attention(const TensorFunc& out, const Stage& pv_acc, int layout_run,
                                            StagedOperands pv_staged, const TensorFunc& probs, const TensorFunc& mm,
                                            const Stage& mm_acc, StagedOperands mm_staged,
                                            const HostScheduleParams& p) {
  std::vector<Var> pa = probs.func.args();
  if (pa.size() < 2 || mm.func.args().size() != pa.size()) return std::nullopt;
  const int64_t S = probs.shape.back(), M = probs.shape[probs.shape.size() - 2];
  const int64_t* m_static = as_const_int(probs.dim(probs.rank() - 2));
  const bool decode = m_static && *m_static <= kDecodeRows;
  const bool s_dynamic = !as_const_int(probs.dim(probs.rank() - 1));  // a decoder's cache length
  // Row blocks within a head: a block's probabilities (rows x S floats, probs x V's A) are kept
  // hot across the head's column tiles, so they are sized like MatMulParams::a_block_bytes
  // (whole tiles, at least one, at most the head's M rows). At S 128 a head is one block; at S
  // 2048 a head's probabilities alone are 16 MB (attention 735 -> 65 ms per layer in blocks).
  const MatMulTile pv_tile = choose_matmul_tile(M, layout_run > 0 ? layout_run : out.shape.back(), p);
  const int64_t head_tiles = (M + pv_tile.rows - 1) / pv_tile.rows, fit = a_block_tiles(S, pv_tile, p);
  const int block_tiles = static_cast<int>(fit > 0 ? std::min(head_tiles, fit) : head_tiles);
  const int64_t block_rows = std::min<int64_t>(M, int64_t{block_tiles} * pv_tile.rows);
  std::optional<OutputTiles> o = tile_output(out, pv_acc, p, 0, layout_run, block_tiles);
  if (!o) return std::nullopt;
  pv_staged.a = nullptr;  // A is the block's probabilities, already dense
  stage_operands(pv_staged, Placement::at(o->f, o->par), p);
  accumulate_per_tile(Placement::at(o->f, o->mo), pv_acc, o->t, p);

  // The block's probabilities, then inside them the block's scores in register tiles.
  Func f = probs.func;
  f.compute_at(o->f, o->rb);
  // A dynamic S is vectorised whatever its representative extent (which may be below the lanes).
  if (S >= p.lanes || s_dynamic) f.vectorize(pa[0], p.lanes, TailStrategy::GuardWithIf);
  const bool per_key = decode && scores_per_key(Placement::at(f, Var::outermost()), mm, mm_acc, p);
  if (!per_key) tiles_at(Placement::at(f, Var::outermost()), mm, mm_acc, block_rows, p);
  StagedOperands per_head{nullptr, per_key ? nullptr : mm_staged.b}, per_block{mm_staged.a, nullptr};
  stage_operands(per_head, Placement::at(o->f, o->par), p);  // K^T once per head (none per key)
  stage_operands(per_block, Placement::at(f, Var::outermost()), p);
  return Placement::at(f, pa[1]);
}

Placement schedule_matmul_rows(const TensorFunc& out, const TensorFunc& mm, const Stage& acc,
                               const HostScheduleParams& p, StagedOperands staged) {
  std::vector<Var> a = out.func.args();
  if (a.size() < 2 || mm.func.args().size() != a.size() || acc.reduction.empty()) return Placement();
  const int64_t N = out.shape.back(), M = out.shape[out.shape.size() - 2];
  const MatMulTile t = choose_matmul_tile(M, N, p);
  // Row blocks of about task_elems elements, whole register tiles, at most M.
  int64_t block = std::max<int64_t>(t.rows, p.rows.task_elems / std::max<int64_t>(N, 1) / t.rows * t.rows);
  if (staged.b) {
    // B (K^T) is staged once per block, a transposing copy of K x N that costs about what 32
    // rows of the block's tiles do: blocks of whole heads while there are 8 or more of them
    // (BERT-base at seq 512: 192 blocks of 32 rows took 3.45 ms per layer, scores and Softmax
    // apart 2.88), else split into 8 tasks' worth.
    int64_t heads = 1;
    for (size_t d = 0; d + 2 < out.shape.size(); ++d) heads *= out.shape[d];
    const int64_t split = std::max<int64_t>(1, 8 / std::max<int64_t>(heads, 1));
    block = std::max(block, ((M + split - 1) / split + t.rows - 1) / t.rows * t.rows);
  }
  block = std::min(block, M);

  Func f = out.func;
  Var mo(f.name() + "_bo"), mi(f.name() + "_bi");
  f.compute_root();
  f.split(a[1], mo, mi, static_cast<int>(block), TailStrategy::ShiftInwards);
  std::vector<VarOrRVar> order{a[0], mi, mo};
  for (size_t i = 2; i < a.size(); ++i) order.emplace_back(a[i]);
  f.reorder(order);
  if (N >= t.lanes) f.vectorize(a[0], t.lanes, TailStrategy::GuardWithIf);
  Var par = fuse_parallel(f, mo, std::vector<Var>(a.begin() + 2, a.end()));
  stage_operands(staged, Placement::at(f, par), p);

  // The block's MatMul output in register tiles, computed before the rows that read it.
  tiles_at(Placement::at(f, par), mm, acc, block, p);
  return Placement::at(f, mi);
}

}  // namespace gaf
