// MatMul (numpy matmul: 1-D operands promoted then squeezed, batch dims broadcast) and Gemm.
#include "fusion/ops/elementwise_util.h"
#include "fusion/ops/families.h"

namespace gaf {

using namespace Halide;

namespace {

// acc(n, row) = sum_k a(k, row) * b(n, k, row / M), as an Accumulator stage: pure init 0 and an
// update over RDom k, which the reference schedule turns into row-wide vector FMAs (k outside
// the vectorised n). `row` flattens every output axis but the last (batch dims and M) so the
// schedule parallelises over all rows even when the batch is 1 (BERT's [1, S, H] x [H, F]).
// The operands are Operand stages, a(k, row) and b(n, k, batch) with batch = row / M: inlined
// on the host; the NPU schedule computes them as its staging copies (GM -> L1 -> L0A/L0B), whose
// bounds per tile are then exact (reading A through row % M would span all M rows).
Func matmul_accumulator(BuildContext& b, Type t, const Expr& M, const Expr& K,
                        const std::function<Expr(const Expr& row, const Expr& k)>& a_at,
                        const std::function<Expr(const Expr& row, const Expr& k, const Expr& n)>& b_at) {
  Var n(b.prefix() + "_n"), row(b.prefix() + "_row"), k_(b.prefix() + "_kk"), batch(b.prefix() + "_batch");
  Func acc;
  if (is_const_zero(K)) {
    acc = b.stage("acc", StageRole::Accumulator);
    acc(n, row) = cast(t, 0);
    return acc;
  }
  // M and K are int32 Exprs: constants in the static case (the schedules read K through
  // as_const_int), symbolic ones (e.g. seq) otherwise. A symbolic K of 0 gives an empty RDom.
  const Expr m = fold(max(M, 1));
  Func a_op = b.stage("a_op", StageRole::Operand), b_op = b.stage("b_op", StageRole::Operand);
  a_op(k_, row) = cast(t, a_at(row, k_));
  b_op(n, k_, batch) = cast(t, b_at(batch * m, k_, n));
  RDom k(0, K, b.prefix() + "_k");
  acc = b.stage("acc", StageRole::Accumulator, {k.x});
  acc(n, row) = cast(t, 0);
  acc(n, row) += a_op(k.x, row) * b_op(n, k.x, row / m);
  return acc;
}

// B packed as bfloat16 pairs (`_b_panel` = w and B of rank 4, [N / w, K / 2, w, 2], see
// generators/weight_packing.h): acc(n, row) = sum over (kp, e) of f32(bf16(a(2 kp + e, row))) *
// f32(B(n / w, kp, n % w, e)), float32 sums. The reduction is {kp, e}: the host schedule
// vectorises e inside n (atomic), a widening dot product over pairs that Halide lowers to
// vdpbf16ps for targets with AVX512_SapphireRapids. A is rounded with Halide's own cast (a
// vcvtneps2bf16 there): the instruction pattern needs a bf16-typed operand.
Func matmul_accumulator_pairs(BuildContext& b, const Expr& K,
                              const std::function<Expr(const Expr& row, const Expr& k)>& a_at, const TensorFunc& B,
                              int w) {
  Var n(b.prefix() + "_n"), row(b.prefix() + "_row"), k_(b.prefix() + "_kk");
  Func a_op = b.stage("a_op", StageRole::Operand);
  a_op(k_, row) = cast(BFloat(16), a_at(row, k_));
  RDom r(0, fold(K / 2), 0, 2, b.prefix() + "_k");
  Func acc = b.stage("acc", StageRole::Accumulator, {r.x, r.y});
  acc(n, row) = 0.0f;
  acc(n, row) += cast<float>(a_op(2 * r.x + r.y, row)) * cast<float>(B({n / w, r.x, n % w, r.y}));
  return acc;
}

// B packed as int8 quads (`_b_panel` = w, B int8 [N / w, K / 4 + 2, w, 4], see
// generators/weight_packing.h): each row of A is quantized on its own — s_row = max_k |a| / 127
// (stage a_scale, the max), a_q = round(a / s_row) + 128 in [1, 255] (stage a_op, uint8) — and
// acc(n, row) = sum over (kq, e) of i32(a_q(4 kq + e, row)) * i32(B(n / w, kq, n % w, e)), int32
// sums: the host schedule vectorises e inside n (atomic), a 4-lane widening u8 x s8 dot product
// that Halide lowers to one vpdpbusd per vector of columns (AVX512_SapphireRapids targets).
// Returns the dequantized product, float32 at (n, row): (acc - 128 colsum_n) * s_row * scale_n,
// with scale_n and colsum_n read from the panel's two rows past K / 4.
Func matmul_int8_quads(BuildContext& b, const Expr& K, const std::function<Expr(const Expr& row, const Expr& k)>& a_at,
                       const TensorFunc& B, int w) {
  Var n(b.prefix() + "_n"), row(b.prefix() + "_row"), k_(b.prefix() + "_kk");
  RDom all_k(0, K, b.prefix() + "_ka");
  Func a_scale = b.stage("a_scale", StageRole::Operand, {all_k.x});
  a_scale(row) = 1e-30f;  // an all-zero row: any positive scale gives zeros
  a_scale(row) = max(a_scale(row), abs(a_at(row, all_k.x)));
  Func a_op = b.stage("a_op", StageRole::Operand);
  a_op(k_, row) = cast(UInt(8), clamp(round(a_at(row, k_) * (127.0f / a_scale(row))), -127.0f, 127.0f) + 128.0f);
  const Expr kq = fold(K / 4);
  RDom r(0, kq, 0, 4, b.prefix() + "_k");
  Func acc = b.stage("acc", StageRole::Accumulator, {r.x, r.y});
  acc(n, row) = 0;
  acc(n, row) += cast<int32_t>(a_op(4 * r.x + r.y, row)) * cast<int32_t>(B({n / w, r.x, n % w, r.y}));
  // A column's float32 scale and int32 quant sum, little-endian bytes in lanes 0..3 of its row.
  auto word = [&](const Expr& q) {
    Expr bits = cast<uint32_t>(0);
    for (int e = 0; e < 4; ++e) bits = bits | (cast<uint32_t>(cast<uint8_t>(B({n / w, q, n % w, e}))) << (8 * e));
    return bits;
  };
  Func out(b.prefix() + "_deq");
  out(n, row) = cast<float>(acc(n, row) - 128 * reinterpret(Int(32), word(kq + 1))) * reinterpret(Float(32), word(kq)) *
                (a_scale(row) / 127.0f);
  return out;
}

void check_numeric(const InferContext& c, int i) {
  c.check(c.dtype(i) != DType::Bool, "input " + std::to_string(i) + " is bool");
  c.check(c.dtype(i) == c.dtype(0), std::string("input ") + std::to_string(i) + " has dtype " + dtype_name(c.dtype(i)) +
                                        " but input 0 has " + dtype_name(c.dtype(0)));
}

// MatMul's operands viewed as batched matrices: 1-D A is [1, K], 1-D B is [K, 1].
struct MatMulShapes {
  Shape a, b;   // promoted to rank >= 2
  Shape batch;  // broadcast batch dims
  int64_t M, K, N;
  bool a_vec, b_vec;
  Shape out() const {
    Shape o = batch;
    if (!a_vec) o.push_back(M);
    if (!b_vec) o.push_back(N);
    return o;
  }
};

// `_b_panel` = w (set by the weight packing at load, generators/weight_packing.h): B, logically
// [K, N], is stored as [N / w, K, w] — panel q holds columns q*w .. q*w+w-1, each row of a panel
// contiguous — so the host schedule's tiles read B as one dense stream per panel.
int64_t b_panel(const InferContext& c) { return c.attrs().get_int("_b_panel", 0); }
// The columns of a packed B whose last panel is padded (`_b_cols` < panels x w); else 0.
int64_t b_cols(const InferContext& c) { return c.attrs().get_int("_b_cols", 0); }

// The logical N of packed B with `panels` panels of w columns.
int64_t packed_n(const InferContext& c, int64_t panels, int64_t w) {
  const int64_t n = b_cols(c);
  if (n == 0) return panels * w;
  c.check(n > (panels - 1) * w && n <= panels * w, "_b_cols " + std::to_string(n) + " does not fit " +
                                                       std::to_string(panels) + " panels of " + std::to_string(w));
  return n;
}

// Packed as int8 quads [N / w, K / 4 + 2, w, 4] (rank 4, int8).
bool b_quads(const InferContext& c) { return b_panel(c) > 0 && c.rank(1) == 4 && c.dtype(1) == DType::Int8; }
// Packed as bfloat16 pairs [N / w, K / 2, w, 2] (rank 4) rather than float32 panels.
bool b_pairs(const InferContext& c) { return b_panel(c) > 0 && c.rank(1) == 4 && !b_quads(c); }

MatMulShapes matmul_shapes(const InferContext& c) {
  MatMulShapes s;
  s.a = c.shape(0);
  s.b = c.shape(1);
  if (b_quads(c)) {
    const int64_t w = b_panel(c);
    c.check(c.dtype(0) == DType::Float32 && s.b[1] >= 3 && s.b[2] == w && s.b[3] == 4,
            "int8-packed B must be int8 [N / " + std::to_string(w) + ", K / 4 + 2, " + std::to_string(w) +
                ", 4] with a float32 A, got " + shape_str(s.b));
    s.b = {(s.b[1] - 2) * 4, packed_n(c, s.b[0], w)};
  } else if (b_pairs(c)) {
    const int64_t w = b_panel(c);
    c.check(c.dtype(0) == DType::Float32 && c.dtype(1) == DType::BFloat16 && s.b[2] == w && s.b[3] == 2,
            "bf16-packed B must be bfloat16 [N / " + std::to_string(w) + ", K / 2, " + std::to_string(w) +
                ", 2] with a float32 A, got " + dtype_name(c.dtype(1)) + " " + shape_str(s.b));
    s.b = {s.b[1] * 2, packed_n(c, s.b[0], w)};
  } else if (int64_t w = b_panel(c)) {
    check_numeric(c, 1);
    c.check(s.b.size() == 3 && s.b[2] == w,
            "packed B must be [N / " + std::to_string(w) + ", K, " + std::to_string(w) + "], got " + shape_str(s.b));
    s.b = {s.b[1], packed_n(c, s.b[0], w)};
  } else {
    check_numeric(c, 1);
  }
  c.check(!s.a.empty() && !s.b.empty(), "operands must have rank >= 1");
  s.a_vec = s.a.size() == 1;
  s.b_vec = s.b.size() == 1;
  if (s.a_vec) s.a.insert(s.a.begin(), 1);
  if (s.b_vec) s.b.push_back(1);
  s.M = s.a[s.a.size() - 2];
  s.K = s.a.back();
  s.N = s.b.back();
  c.check(s.b[s.b.size() - 2] == s.K,
          "inner dimensions differ: " + shape_str(c.shape(0)) + " x " + shape_str(c.shape(1)));
  s.batch = broadcast_shapes(c, {Shape(s.a.begin(), s.a.end() - 2), Shape(s.b.begin(), s.b.end() - 2)});
  return s;
}

void add_matmul(OpRegistry& r) {
  OpSchema s;
  s.name = "MatMul";
  s.split_rule = OpSchema::SplitRule::MatMul;
  s.op_class = OpClass::MatMul;
  s.min_inputs = s.max_inputs = 2;
  s.infer = [](const InferContext& c) { return std::vector<TensorDesc>{{c.dtype(0), matmul_shapes(c).out()}}; };
  s.build = [](BuildContext& b) {
    MatMulShapes sh = matmul_shapes(b.infer());
    const TensorFunc &A = b.in(0), &B = b.in(1);
    int nb = static_cast<int>(sh.batch.size());
    // Extents as Exprs (symbolic along e.g. seq): the batch dims are the output's, M and K A's.
    std::vector<Expr> batch;
    for (int d = 0; d < nb; ++d) batch.push_back(b.out_dim(0, d));
    const Expr M = sh.a_vec ? Expr(1) : A.dim(A.rank() - 2), K = A.dim(A.rank() - 1);
    // Batch indices of a flattened row (row = batch_flat * M + m), right-aligned to `shape`'s
    // batch dims with size-1 dims read at 0.
    // The outermost batch dim whose extent is not the constant 1 takes the rest without a modulo
    // (the dims before it are 1 and read at 0): BERT's [1, heads] batch then gives head = row / M,
    // which Halide's bounds can follow into a block of rows (a modulo would make every block span
    // all heads); the dims inside it are taken without % either (below).
    int first_wide = 0;
    while (first_wide < nb - 1 && is_const_one(batch[first_wide])) ++first_wide;
    // With a symbolic M, Halide's bounds of row / M over a tile of rows that ShiftInwards moved
    // or that over-computes past the last row reach outside [0, extent) (a head at -1 in a
    // GPT-2 attention group at seq 32 of 16..64): clamped, a no-op on the rows the output keeps.
    const bool symbolic_m = !is_const(M);
    auto batch_idx = [&](const Expr& row, const Shape& shape) {
      std::vector<Expr> full(nb);
      Expr rest = row / M;
      for (int d = nb - 1; d >= 0; --d) {
        // Inner batch dims as rest - (rest / n) * n, clamped (no-ops on values), not rest % n: a
        // row block's bounds then stay within its own (batch, head) — through % every block of
        // a batched attention spanned all heads (BERT at batch 4: 12.6 ms per layer's attention
        // against 0.28 ms at batch 1).
        full[d] = d > first_wide ? clamp(rest - (rest / batch[d]) * batch[d], 0, fold(batch[d] - 1))
                  : symbolic_m   ? clamp(rest, 0, fold(batch[d] - 1))
                                 : rest;
        rest = rest / batch[d];
      }
      int own = static_cast<int>(shape.size()) - 2;
      std::vector<Expr> idx;
      for (int d = 0; d < own; ++d) idx.push_back(shape[d] == 1 ? Expr(0) : full[nb - own + d]);
      return idx;
    };
    // Reads through the promoted shapes: a promoted size-1 axis is not indexed.
    auto a_at = [&](const Expr& row, const Expr& k) {
      std::vector<Expr> idx = batch_idx(row, sh.a);
      // row % M written as row - (row / M) * M: for a block of rows within one batch entry
      // (attention's row blocks within a head) Halide's bounds then simplify to the block's
      // rows of A; through % they span all M rows (every block would compute the whole head).
      // The clamp (a no-op on values) keeps bounds that do not simplify within [0, M).
      if (!sh.a_vec) idx.push_back(clamp(row - (row / M) * M, 0, fold(M - 1)));
      idx.push_back(k);
      return A(idx);
    };
    const int w = static_cast<int>(b_panel(b.infer()));
    auto b_at = [&](const Expr& row, const Expr& k, const Expr& n) {
      if (w > 0) return B({n / w, k, n % w});  // packed: 2-D B, no batch dims
      std::vector<Expr> idx = batch_idx(row, sh.b);
      idx.push_back(k);
      if (!sh.b_vec) idx.push_back(n);
      return B(idx);
    };
    Func acc = b_quads(b.infer())   ? matmul_int8_quads(b, K, a_at, B, w)
               : b_pairs(b.infer()) ? matmul_accumulator_pairs(b, K, a_at, B, w)
                                    : matmul_accumulator(b, halide_type(A.dtype), M, K, a_at, b_at);
    std::vector<Var> v = b.vars(static_cast<int>(sh.out().size()));
    Expr row = 0;
    for (int d = 0; d < nb; ++d) row = row * batch[d] + v[d];
    row = row * M + (sh.a_vec ? Expr(0) : Expr(v[nb]));
    Expr n = sh.b_vec ? Expr(0) : Expr(v.back());
    b.define_output(0, v, acc(n, row));
  };
  r.add(std::move(s));
}

// Gemm: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A (likewise B), C broadcast to (M, N).
void add_gemm(OpRegistry& r) {
  OpSchema s;
  s.name = "Gemm";
  s.op_class = OpClass::MatMul;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const InferContext& c) {
    check_numeric(c, 1);
    c.check(c.rank(0) == 2 && c.rank(1) == 2,
            "A and B must be 2-D, got " + shape_str(c.shape(0)) + " and " + shape_str(c.shape(1)));
    bool ta = c.attrs().get_int("transA", 0) != 0, tb = c.attrs().get_int("transB", 0) != 0;
    int64_t M = c.shape(0)[ta ? 1 : 0], K = c.shape(0)[ta ? 0 : 1];
    int64_t Kb = c.shape(1)[tb ? 1 : 0], N = c.shape(1)[tb ? 0 : 1];
    c.check(K == Kb, "inner dimensions differ: " + shape_str(c.shape(0)) + " x " + shape_str(c.shape(1)) +
                         " with transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
    if (c.has_input(2)) {
      check_numeric(c, 2);
      Shape bc = broadcast_shapes(c, {c.shape(2), {M, N}});
      c.check(bc == Shape({M, N}),
              "C of shape " + shape_str(c.shape(2)) + " does not broadcast to " + shape_str({M, N}));
    }
    return std::vector<TensorDesc>{{c.dtype(0), {M, N}}};
  };
  s.build = [](BuildContext& b) {
    bool ta = b.attrs().get_int("transA", 0) != 0, tb = b.attrs().get_int("transB", 0) != 0;
    const TensorFunc &A = b.in(0), &B = b.in(1);
    Type t = halide_type(A.dtype);
    Func acc = matmul_accumulator(
        b, t, A.dim(ta ? 1 : 0), A.dim(ta ? 0 : 1),
        [&](const Expr& m, const Expr& k) {
          return ta ? A({k, m}) : A({m, k});
        },
        [&](const Expr&, const Expr& k, const Expr& n) {
          return tb ? B({n, k}) : B({k, n});
        });
    std::vector<Var> v = b.vars(2);
    Expr y = acc(v[1], v[0]);
    float alpha = b.attrs().get_float("alpha", 1.0f), beta = b.attrs().get_float("beta", 1.0f);
    if (alpha != 1.0f) y = cast(t, alpha) * y;
    if (b.has_input(2) && beta != 0.0f) {
      Expr cv = b.broadcast_read(2, v);
      y = y + (beta == 1.0f ? cv : cast(t, beta) * cv);
    }
    b.define_output(0, v, y);
  };
  r.add(std::move(s));
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  add_matmul(r);
  add_gemm(r);
}

}  // namespace gaf
