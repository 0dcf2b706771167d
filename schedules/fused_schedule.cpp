#include "schedules/fused_schedule.h"

#include "schedules/reference_schedule.h"

namespace gaf {

using namespace Halide;

namespace {

// Where a Func is computed: at root, or inside a Func's loop over `var`. (Halide's LoopLevel
// cannot be inspected before lowering, hence this small value type.)
struct Placement {
  bool root = true;
  Func func;
  Var var;
  static Placement at(Func f, Var v) {
    Placement p;
    p.root = false;
    p.func = f;
    p.var = v;
    return p;
  }
};

// Outputs: 8 float lanes (one AVX2 register; the AVX-512 schedules come with the host-schedule
// work) on the innermost axis, the outer axes fused and parallel so a batch of 1 still spreads
// rows over the cores. Returns the row loop (args[1]) for compute_at, or root when rank < 2.
Placement schedule_output(const TensorFunc& t) {
  Func f = t.func;
  std::vector<Var> a = f.args();
  f.compute_root();
  if (a.empty()) return Placement();
  if (t.shape.back() >= 8) f.vectorize(a[0], 8, TailStrategy::GuardWithIf);
  if (a.size() == 1) return Placement();
  if (a.size() >= 3) {
    Var outer = a.back();
    for (size_t i = a.size() - 1; i-- > 2;) {
      Var fused(f.name() + "_outer" + std::to_string(i));
      f.fuse(outer, a[i], fused);
      outer = fused;
    }
    f.parallel(outer);
  } else {
    f.parallel(a[1]);
  }
  return Placement::at(f, a[1]);
}

void place(Func f, const Placement& at) {
  if (at.root) f.compute_root();
  else f.compute_at(at.func, at.var);
}

}  // namespace

void apply_fused_schedule(const std::vector<TensorFunc>& group_outputs, const TensorFunc* anchor,
                          const std::vector<MemberFuncs>& members) {
  std::map<std::string, Placement> row_of;
  for (const TensorFunc& t : group_outputs)
    if (t.defined()) row_of[t.func.name()] = schedule_output(t);
  Placement anchor_row = anchor && anchor->defined() ? row_of[anchor->func.name()] : Placement();

  for (const MemberFuncs& m : members) {
    // Where this member's stages go: with its compute_at output, or in its own row loop.
    Placement stage_at;
    for (size_t k = 0; k < m.outputs.size(); ++k) {
      const TensorFunc& t = m.outputs[k];
      if (!t.defined()) continue;
      const FuncDecision& d = m.decisions[k];
      auto own = row_of.find(t.func.name());
      if (own != row_of.end()) {
        // A group output: its statistics go in its own row loop, unless other outputs read
        // them too (LayerNormalization's Mean/InvStdDev), then they are computed at root.
        if (row_of.size() == 1) stage_at = own->second;
        continue;
      }
      Func f = t.func;
      switch (d.decision) {
        case ComputeDecision::Inline:
          if (f.has_update_definition()) f.compute_root();  // Halide cannot inline updates
          break;
        case ComputeDecision::ComputeAt:
          place(f, anchor_row);
          stage_at = anchor_row;
          break;
        case ComputeDecision::Root:
          f.compute_root();
          break;
      }
    }
    for (const Stage& s : m.stages) {
      Func f = s.func;  // a handle: scheduling it schedules the stage
      switch (s.role) {
        case StageRole::Statistic: place(f, stage_at); break;
        case StageRole::Accumulator:
          place(f, stage_at);
          schedule_accumulator(s);
          break;
        case StageRole::Constant: f.compute_root(); break;
        case StageRole::Pointwise:
          if (f.has_update_definition()) f.compute_root();
          break;
      }
    }
  }
}

}  // namespace gaf
