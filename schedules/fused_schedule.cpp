#include "schedules/fused_schedule.h"

#include <map>
#include <optional>
#include <set>

#include "schedules/conv_schedule.h"
#include "schedules/matmul_schedule.h"
#include "schedules/reference_schedule.h"
#include "schedules/row_schedule.h"

namespace gaf {

using namespace Halide;

namespace {

const Stage* accumulator_of(const MemberFuncs& m) {
  for (const Stage& s : m.stages)
    if (s.role == StageRole::Accumulator) return &s;
  return nullptr;
}

// The MatMul's operand stages to stage (MemberFuncs::stage_a, stage_b).
StagedOperands staged_operands(const MemberFuncs& m) {
  std::vector<const Stage*> ops;  // a_op, then b_op (matmul.cpp)
  for (const Stage& s : m.stages)
    if (s.role == StageRole::Operand) ops.push_back(&s);
  StagedOperands staged;
  const Stage* acc = accumulator_of(m);
  if (m.b_panel > 0 && acc && acc->reduction.size() == 2) {
    staged.a_converted = ops;  // dot products read B directly: their operand stages convert A
  } else if (ops.size() == 2) {
    if (m.stage_a) staged.a = ops[0];
    if (m.stage_b) staged.b = ops[1];
  }
  return staged;
}

bool has_statistic(const MemberFuncs& m) {
  for (const Stage& s : m.stages)
    if (s.role == StageRole::Statistic) return true;
  return false;
}

bool has_statistics(const std::vector<MemberFuncs>& members) {
  for (const MemberFuncs& m : members)
    if (has_statistic(m)) return true;
  return false;
}

// A reduction member whose output `t` is 1 (or absent), right-aligned against the anchor's shape,
// along an axis other than the innermost where the anchor is longer: in the anchor's row loop it
// would be computed again for every row along that axis (a LayerNorm over the channels of NCHW:
// its per-pixel statistics recomputed for every channel, ConvNeXt's stem norm 37 ms instead of
// ~0.1). Computed in rows of its own at root instead.
bool repeats_across_rows(const MemberFuncs& m, const Shape& t, const Shape& anchor) {
  if (!has_statistic(m)) return false;
  for (size_t i = 1; i < anchor.size(); ++i) {  // i: position from the end, past the innermost
    const int64_t extent = i < t.size() ? t[t.size() - 1 - i] : 1;
    if (extent == 1 && anchor[anchor.size() - 1 - i] > 1) return true;
  }
  return false;
}

bool same_trailing_dims(const Shape& a, const Shape& b, size_t n) {
  if (a.size() < n || b.size() < n) return false;
  return std::equal(a.end() - n, a.end(), b.end() - n);
}

// Decides which Func carries each tiled MatMul's register tiles: the group output its epilogue
// ends in (compute_at decision), else the MatMul's own output, materialised at root. Returns the
// tiled Funcs by name and the members whose MatMul they carry.
struct Tiles {
  std::set<std::string> funcs;           // Funcs scheduled as MatMul tiles
  std::set<const MemberFuncs*> owners;   // members whose output and accumulator those cover
  std::optional<Placement> anchor_rows;  // the anchor's row loop, when a MatMul is tiled inside it
  const MemberFuncs* probs = nullptr;    // attention whole: the Softmax member, computed per block
  Placement probs_rows;                  // its row loop, where its statistics go
};

// The group output a multi-output group's compute_at decisions name (null if none or several).
const TensorFunc* decided_rows_anchor(const std::vector<TensorFunc>& outputs, const std::vector<MemberFuncs>& members) {
  const TensorFunc* at = nullptr;
  for (const MemberFuncs& m : members) {
    if (m.tiled_matmul) continue;  // at its carrier's tiles (tile_matmuls), not in rows
    for (const FuncDecision& d : m.decisions) {
      if (d.decision != ComputeDecision::ComputeAt || d.at_output < 0 ||
          static_cast<size_t>(d.at_output) >= outputs.size())
        continue;
      if (at && at != &outputs[static_cast<size_t>(d.at_output)]) return nullptr;
      at = &outputs[static_cast<size_t>(d.at_output)];
    }
  }
  return at;
}

const MemberFuncs* member_with_role(const std::vector<MemberFuncs>& members, MemberRole r) {
  for (const MemberFuncs& m : members)
    if (m.role == r) return &m;
  return nullptr;
}

// Attention whole: the members the rule `attention` matched as scores (Q x K^T), probabilities
// (their Softmax) and context (probs x V). Schedules them with schedule_attention and returns true
// when the schedule's conditions hold — probs x V is the anchor or carried by it through a layout
// epilogue, both MatMuls tiled at the anchor, the scores an activation x activation MatMul of the
// probabilities' shape; false (nothing scheduled) otherwise.
bool tile_attention(const TensorFunc* anchor, const std::vector<MemberFuncs>& members, const HostScheduleParams& p,
                    Tiles& tiled) {
  const MemberFuncs* pv = member_with_role(members, MemberRole::Context);
  const MemberFuncs* sm = member_with_role(members, MemberRole::Probabilities);
  const MemberFuncs* mm = member_with_role(members, MemberRole::Scores);
  if (!anchor || !anchor->defined() || !pv || !sm || !mm) return false;
  const Stage* pv_acc = accumulator_of(*pv);
  const Stage* mm_acc = accumulator_of(*mm);
  if (!pv->tiled_matmul || !pv_acc || !pv->outputs[0].defined() || !mm->tiled_matmul || !mm_acc || mm->b_constant ||
      !mm->outputs[0].defined() || mm->decisions[0].decision != ComputeDecision::ComputeAt)
    return false;
  if (pv->a_member < 0 || &members[pv->a_member] != sm || !has_statistic(*sm) || sm->outputs.empty() ||
      !sm->outputs[0].defined() || sm->outputs[0].shape != mm->outputs[0].shape)
    return false;
  const bool is_anchor = pv->outputs[0].func.name() == anchor->func.name();
  if (!is_anchor && (pv->decisions[0].decision != ComputeDecision::ComputeAt || pv->layout_run == 0)) return false;
  std::optional<Placement> rows =
      schedule_attention(*anchor, *pv_acc, is_anchor ? 0 : pv->layout_run, staged_operands(*pv), sm->outputs[0],
                         mm->outputs[0], *mm_acc, staged_operands(*mm), p);
  if (!rows) return false;
  tiled.funcs.insert(anchor->func.name());
  tiled.owners.insert(pv);
  tiled.owners.insert(mm);
  tiled.probs = sm;
  tiled.probs_rows = *rows;
  return true;
}

// A Conv (MemberFuncs::tiled_conv) whose output is the anchor or reaches it through an
// epilogue of the same shape (bias, activation, residual Add): the anchor in direct-conv tiles
// with the Conv's accumulator per tile (conv_schedule.h). A Conv computed at root inside the
// group (a layout op follows it: ViT's patch embedding flattened and transposed to tokens) is
// tiled on its own output, which the layout ops then read (else its accumulator ran unscheduled:
// 63 ms instead of ~2 for ViT-B/16's patch embedding). False, nothing scheduled, otherwise.
bool tile_conv(const TensorFunc* anchor, const std::vector<MemberFuncs>& members, const HostScheduleParams& p,
               Tiles& tiled) {
  for (const MemberFuncs& m : members) {
    const Stage* acc = accumulator_of(m);
    if (!m.tiled_conv || !acc || m.outputs.empty() || !m.outputs[0].defined()) continue;
    const ComputeDecision d = m.decisions[0].decision;
    const bool is_anchor = anchor && anchor->defined() && m.outputs[0].func.name() == anchor->func.name();
    const TensorFunc* carrier = d == ComputeDecision::Root && !is_anchor ? &m.outputs[0] : anchor;
    if (!carrier || !carrier->defined()) return false;
    const Stage* input = nullptr;
    for (const Stage& s : m.stages)
      if (s.role == StageRole::Operand) input = &s;
    if (!schedule_conv_tiles(*carrier, *acc, m.outputs[0].shape, input, p)) return false;
    tiled.funcs.insert(carrier->func.name());
    tiled.owners.insert(&m);
    return true;
  }
  return false;
}

// A gated MLP (rule gated_mlp: roles Gate and Up) whose gated product is the anchor: both
// projections' accumulators per panel of it (schedule_gated_tiles). False, nothing scheduled,
// when either is not a tiled MatMul computed at the anchor or their B are packed differently.
bool tile_gated(const TensorFunc* anchor, const std::vector<MemberFuncs>& members, const HostScheduleParams& p,
                Tiles& tiled) {
  const MemberFuncs* gate = member_with_role(members, MemberRole::Gate);
  const MemberFuncs* up = member_with_role(members, MemberRole::Up);
  if (!anchor || !anchor->defined() || !gate || !up || gate->b_panel != up->b_panel) return false;
  for (const MemberFuncs* m : {gate, up})
    if (!m->tiled_matmul || !accumulator_of(*m) || m->outputs.empty() || !m->outputs[0].defined() ||
        m->decisions[0].decision != ComputeDecision::ComputeAt ||
        !same_trailing_dims(anchor->shape, m->outputs[0].shape, 2))
      return false;
  if (!schedule_gated_tiles(*anchor, *accumulator_of(*gate), staged_operands(*gate), *accumulator_of(*up),
                            staged_operands(*up), p, gate->b_panel))
    return false;
  tiled.funcs.insert(anchor->func.name());
  tiled.owners.insert(gate);
  tiled.owners.insert(up);
  return true;
}

Tiles tile_matmuls(const std::vector<TensorFunc>& outputs, const TensorFunc* anchor,
                   const std::vector<MemberFuncs>& members, const HostScheduleParams& p) {
  Tiles tiled;
  if (tile_attention(anchor, members, p, tiled)) return tiled;
  if (tile_conv(anchor, members, p, tiled)) return tiled;
  if (tile_gated(anchor, members, p, tiled)) return tiled;
  std::map<std::string, const TensorFunc*> output_named;
  for (const TensorFunc& t : outputs)
    if (t.defined()) output_named[t.func.name()] = &t;
  bool stats = has_statistics(members);
  // The rows path computes the anchor in row blocks: not when the anchor is itself a tiled
  // MatMul's output (a MatMul reading the normalised rows, scheduled by its own tiles).
  bool anchor_is_matmul = false;
  for (const MemberFuncs& m : members)
    anchor_is_matmul = anchor_is_matmul || (m.tiled_matmul && anchor && anchor->defined() && !m.outputs.empty() &&
                                            m.outputs[0].defined() && m.outputs[0].func.name() == anchor->func.name());
  for (const MemberFuncs& m : members) {
    const Stage* acc = accumulator_of(m);
    if (!m.tiled_matmul || !acc || m.outputs.empty() || !m.outputs[0].defined()) continue;
    const TensorFunc& mm = m.outputs[0];
    if (stats && !output_named.count(mm.func.name()) && m.decisions[0].decision == ComputeDecision::ComputeAt &&
        !m.b_constant && anchor && anchor->defined() && !tiled.anchor_rows && !anchor_is_matmul &&
        same_trailing_dims(anchor->shape, mm.shape, 2)) {
      // Rows of the MatMul normalised whole (scores + Softmax): tiles inside the anchor's row
      // blocks. Not with weights as B (projection + LayerNorm): every row block would stream all
      // of B, and the tiles' parallel panels read it once — measured at 12 layers, seq 128:
      // 1.18 ms per MatMul+LayerNorm group in row blocks (one per core) vs 1.09 ms with the
      // MatMul tiled at root and the LayerNorm rows after it.
      tiled.anchor_rows = schedule_matmul_rows(*anchor, mm, *acc, p, staged_operands(m));
      tiled.owners.insert(&m);
      continue;
    }
    // With several outputs, the output the planner found this MatMul's elementwise epilogue to
    // end in (FuncDecision::at_output): a pre-norm block's residual sum, whose rows the norm reads
    // back; a projection's bias. Its tiles store that output, no copy of the MatMul at root.
    // (GPT-2 c_proj + ln_2: 0.61 ms with the MatMul at root and the bias and residual added in a
    // row pass, 0.50 ms carried, 0.51 ms as two kernels; AMD EPYC Zen 5.)
    const int at = m.decisions[0].decision == ComputeDecision::ComputeAt ? m.decisions[0].at_output : -1;
    if (!anchor && at >= 0 && static_cast<size_t>(at) < outputs.size() && outputs[static_cast<size_t>(at)].defined()) {
      const TensorFunc& carried = outputs[static_cast<size_t>(at)];
      if (!tiled.funcs.count(carried.func.name()) && same_trailing_dims(carried.shape, mm.shape, 2) &&
          schedule_matmul_tiles(carried, *acc, p, m.b_panel, staged_operands(m))) {
        tiled.funcs.insert(carried.func.name());
        tiled.owners.insert(&m);
        continue;
      }
    }
    const TensorFunc* carrier = &mm;
    const bool at_anchor = !output_named.count(mm.func.name()) &&
                           m.decisions[0].decision == ComputeDecision::ComputeAt && anchor && anchor->defined() &&
                           !tiled.funcs.count(anchor->func.name()) && !stats;
    if (at_anchor && same_trailing_dims(anchor->shape, mm.shape, 2)) carrier = anchor;
    // Tiles stored through a layout epilogue (probs x V back into [S, hidden]): no copy pass.
    if (at_anchor && m.layout_run > 0 &&
        schedule_matmul_tiles(*anchor, *acc, p, m.b_panel, staged_operands(m), m.layout_run)) {
      tiled.funcs.insert(anchor->func.name());
      tiled.owners.insert(&m);
      continue;
    }
    if (schedule_matmul_tiles(*carrier, *acc, p, m.b_panel, staged_operands(m))) {
      tiled.funcs.insert(carrier->func.name());
      tiled.owners.insert(&m);
    }
  }
  return tiled;
}

}  // namespace

void apply_fused_schedule(const std::vector<TensorFunc>& group_outputs, const TensorFunc* anchor,
                          const std::vector<MemberFuncs>& members, const HostScheduleParams& p) {
  const Tiles tiled = tile_matmuls(group_outputs, anchor, members, p);
  auto is_tiled = [&](const Func& f) { return tiled.funcs.count(f.name()) > 0; };

  std::map<std::string, int> transpose_dim;  // group outputs that are innermost-moving transposes
  for (const MemberFuncs& m : members)
    if (m.transpose_dim > 0 && !m.outputs.empty() && m.outputs[0].defined())
      transpose_dim[m.outputs[0].func.name()] = m.transpose_dim;
  std::map<std::string, Placement> row_of;
  for (const TensorFunc& t : group_outputs) {
    if (!t.defined() || is_tiled(t.func)) continue;
    const bool blocks = tiled.anchor_rows && anchor && t.func.name() == anchor->func.name();
    auto tr = transpose_dim.find(t.func.name());
    const int dim = tr != transpose_dim.end() ? tr->second : 0;
    if (blocks) {
      row_of[t.func.name()] = *tiled.anchor_rows;
    } else if (dim > 0 && t.shape.back() >= p.lanes && t.shape[t.shape.size() - 1 - dim] >= p.lanes) {
      schedule_transpose(t, dim, p);
      row_of[t.func.name()] = Placement();  // no row loop: its stages (none) go at root
    } else {
      row_of[t.func.name()] = schedule_rows(t, p);
    }
  }
  // The rows compute_at decisions refer to: the anchor's, or with several outputs the one the
  // planner named (a pre-norm block's normalised rows, FuncDecision::at_output).
  const TensorFunc* rows_anchor = anchor ? anchor : decided_rows_anchor(group_outputs, members);
  Placement anchor_row;
  if (rows_anchor && rows_anchor->defined() && row_of.count(rows_anchor->func.name()))
    anchor_row = row_of[rows_anchor->func.name()];
  // The A of a MatMul tiled on its own output at root (attention when its block schedule does
  // not apply) is read there, outside the anchor's rows: it is computed at root too.
  std::set<const MemberFuncs*> read_at_root;
  for (const MemberFuncs* m : tiled.owners)
    if (m->a_member >= 0 && tiled.funcs.count(m->outputs[0].func.name())) read_at_root.insert(&members[m->a_member]);

  for (const MemberFuncs& m : members) {
    if (tiled.owners.count(&m)) continue;  // output and accumulator scheduled by the tiles
    if (&m == tiled.probs) {               // computed per attention block; its statistics per row of it
      for (const Stage& s : m.stages) {
        if (s.role == StageRole::Statistic) schedule_statistic(s, tiled.probs_rows, p);
        if (s.role == StageRole::RowValues) schedule_row_values(s, tiled.probs_rows, p);
      }
      continue;
    }
    // Where this member's stages go: with its compute_at output, or in its own row loop.
    Placement stage_at;
    int own_rows = 0;  // this member's outputs that are group outputs with row loops of their own
    for (const TensorFunc& t : m.outputs)
      if (t.defined() && row_of.count(t.func.name())) ++own_rows;
    for (size_t k = 0; k < m.outputs.size(); ++k) {
      const TensorFunc& t = m.outputs[k];
      if (!t.defined() || is_tiled(t.func)) continue;
      const FuncDecision& d = m.decisions[k];
      auto own = row_of.find(t.func.name());
      if (own != row_of.end()) {
        // A group output: its statistics go in its own row loop, unless other outputs of this
        // member read them too (LayerNormalization's Mean/InvStdDev), then they are computed at
        // root. Other group outputs do not matter: they cannot read a member's statistics (a
        // pre-norm block's residual sum beside its norm; counting them put GPT-2's embedding
        // LayerNorm's statistics in a serial loop at root, 0.21 ms vs 0.13 ms as two kernels).
        if (own_rows == 1) stage_at = own->second;
        continue;
      }
      Func f = t.func;
      switch (d.decision) {
        case ComputeDecision::Inline:
          if (f.has_update_definition()) f.compute_root();  // Halide cannot inline updates
          break;
        case ComputeDecision::ComputeAt:
          if (read_at_root.count(&m) || (rows_anchor && repeats_across_rows(m, t.shape, rows_anchor->shape))) {
            stage_at = schedule_rows(t, p);
            break;
          }
          anchor_row.apply(f);
          stage_at = anchor_row;
          break;
        case ComputeDecision::Root: schedule_rows(t, p); break;
      }
    }
    // Only a one-axis statistic has one value per output row; others at root so they are not
    // recomputed for every row. A member's RowValues are read by its statistics: in the rows only
    // when all of them are (a Softmax before opset 13 reduces over several axes).
    bool row_statistics = true;
    for (const Stage& s : m.stages)
      if (s.role == StageRole::Statistic && s.reduction.size() != 1) row_statistics = false;
    for (const Stage& s : m.stages) {
      Func f = s.func;  // a handle: scheduling it schedules the stage
      switch (s.role) {
        case StageRole::Statistic: schedule_statistic(s, s.reduction.size() == 1 ? stage_at : Placement(), p); break;
        case StageRole::Accumulator:
          stage_at.apply(f);
          schedule_accumulator(s);
          break;
        case StageRole::Constant: f.compute_root(); break;
        case StageRole::RowValues: schedule_row_values(s, row_statistics ? stage_at : Placement(), p); break;
        case StageRole::Operand:  // inlined into the accumulator; a reduction (a row's scale) at root
        case StageRole::Pointwise:
          if (f.has_update_definition()) f.compute_root();
          break;
      }
    }
  }
}

}  // namespace gaf
