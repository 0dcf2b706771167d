#include "schedules/npu_schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "schedules/npu_tiles.h"

namespace gaf {

using namespace Halide;

namespace {

int elem_bytes(const Func& f) { return f.output_types()[0].bytes(); }

// Vector ops per element of a Func: arithmetic, comparison and math-call nodes of its
// definition, with Funcs it inlines counted in, and an update's ops times its reduction size.
class OpCounter : public Internal::IRVisitor {
 public:
  explicit OpCounter(const std::function<bool(const std::string&)>& inlined) : inlined_(inlined) {}
  double count(const Internal::Function& f) {
    auto it = memo_.find(f.name());
    if (it != memo_.end()) return it->second;
    memo_[f.name()] = 0;  // guards against recursion
    double total = visit_exprs(f.values());
    for (const Internal::Definition& u : f.updates()) {
      double size = 1;
      for (const Internal::ReductionVariable& rv : u.schedule().rvars())
        if (const int64_t* e = as_const_int(rv.extent)) size *= static_cast<double>(*e);
      total += visit_exprs(u.values()) * size;
    }
    return memo_[f.name()] = total;
  }

 private:
  double visit_exprs(const std::vector<Expr>& es) {
    double saved = n_;
    n_ = 0;
    for (const Expr& e : es) e.accept(this);
    double r = n_;
    n_ = saved;
    return r;
  }
  using IRVisitor::visit;
#define GAF_COUNT(T)                           \
  void visit(const Internal::T* op) override { \
    n_ += 1;                                   \
    IRVisitor::visit(op);                      \
  }
  GAF_COUNT(Add)
  GAF_COUNT(Sub) GAF_COUNT(Mul) GAF_COUNT(Div) GAF_COUNT(Mod) GAF_COUNT(Min) GAF_COUNT(Max) GAF_COUNT(EQ) GAF_COUNT(NE)
      GAF_COUNT(LT) GAF_COUNT(LE) GAF_COUNT(GT) GAF_COUNT(GE) GAF_COUNT(And) GAF_COUNT(Or) GAF_COUNT(Not)
          GAF_COUNT(Select)
#undef GAF_COUNT
              void visit(const Internal::Call* op) override {
    if (op->call_type == Internal::Call::Halide && op->func.defined()) {
      Internal::Function callee(op->func);
      if (inlined_(callee.name())) n_ += count(callee);
    } else if (op->call_type == Internal::Call::PureExtern) {
      n_ += 1;  // exp, log, sqrt, ...
    }
    IRVisitor::visit(op);
  }
  std::function<bool(const std::string&)> inlined_;
  std::map<std::string, double> memo_;
  double n_ = 0;
};

// A GM buffer the group writes: a group output (staged: computed in UB per tile, then copied to
// its GM Func) or a value materialised in GM because several outputs read it (direct: the Func
// itself is the GM buffer, its producers computed per tile).
struct Root {
  Func compute;  // the Func whose value this is
  Func gm;       // the GM buffer (== compute when direct)
  Shape shape;   // ONNX order; empty with unknown_shape
  bool unknown_shape = false;
  bool direct = false;
  const MemberFuncs* cube = nullptr;  // the MatMul whose accumulator tiles this buffer
  int output = -1;                    // group output index, or -1
};

class NpuScheduler {
 public:
  NpuScheduler(const std::string& label, const std::vector<TensorFunc>& outputs,
               const std::vector<MemberFuncs>& members, const std::vector<NpuGroupInput>& inputs,
               const NpuTarget& target, const NpuScheduleParams& params)
      : label_(label), outputs_(outputs), members_(members), inputs_(inputs), t_(target), p_(params) {}

  NpuSchedule run() {
    index_funcs();
    make_roots();
    resolve_shared();
    NpuSchedule out;
    for (size_t r = 0; r < roots_.size(); ++r) schedule_root(r, out);
    // Inputs and embedded constants are GM sources read only through staging copies, which are
    // what the simulator counts: they need no stage entries of their own.
    for (const std::string& c : constants_) funcs_.at(c).compute_root();
    for (size_t k = 0; k < outputs_.size(); ++k) out.gm_outputs.push_back(output_gm_[k]);
    return out;
  }

 private:
  // ---- the group's Funcs --------------------------------------------------------------------
  void index_funcs() {
    for (const NpuGroupInput& in : inputs_)
      if (in.param.defined()) gm_inputs_.insert(Func(in.param).name());  // the param's Func: "<name>_im"
    for (const MemberFuncs& m : members_) {
      for (size_t k = 0; k < m.outputs.size(); ++k) {
        const TensorFunc& t = m.outputs[k];
        if (!t.defined()) continue;
        add(t.func, &m);
        shape_of_[t.func.name()] = t.shape;
        if (m.layout) layout_.insert(t.func.name());
        if (m.decisions[k].decision == ComputeDecision::Root || Func(t.func).has_update_definition())
          computed_.insert(t.func.name());
      }
      for (const Stage& s : m.stages) {
        add(s.func, &m);
        if (m.layout) layout_.insert(s.func.name());
        switch (s.role) {
          case StageRole::Constant: constants_.insert(s.func.name()); break;
          case StageRole::Operand: break;    // computed when its MatMul is cube-tiled
          case StageRole::RowValues: break;  // inlined into the statistic and the output
          case StageRole::Accumulator:
            acc_member_[s.func.name()] = &m;
            computed_.insert(s.func.name());
            break;
          default: computed_.insert(s.func.name()); break;
        }
      }
    }
    for (const TensorFunc& t : outputs_)
      if (t.defined()) add(t.func, nullptr);
  }

  void add(const Func& f, const MemberFuncs* m) {
    funcs_.emplace(f.name(), f);
    if (m) member_of_.emplace(f.name(), m);
  }

  bool is_gm_source(const std::string& f) const {
    if (gm_inputs_.count(f) || constants_.count(f)) return true;
    for (const Root& r : roots_)
      if (r.direct && r.gm.name() == f) return true;
    return false;
  }

  static const Stage* stage_of(const MemberFuncs& m, StageRole role) {
    for (const Stage& s : m.stages)
      if (s.role == role) return &s;
    return nullptr;
  }

  // ---- which GM buffers there are -------------------------------------------------------------
  void make_roots() {
    output_gm_.resize(outputs_.size());
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const TensorFunc& t = outputs_[k];
      Root r;
      r.compute = t.func;
      r.gm = Func(t.func.name() + "_gm");
      r.gm(t.func.args()) = Func(t.func)(t.func.args());
      r.shape = t.shape;
      r.output = static_cast<int>(k);
      output_gm_[k] = r.gm;
      roots_.push_back(r);
    }
    bool stats = false;
    for (const MemberFuncs& m : members_) stats = stats || stage_of(m, StageRole::Statistic);
    // A MatMul reading row statistics' results as A (attention's probs x V): the normalised rows
    // go through GM, one buffer whose tiles hold whole rows, as when the groups were separate.
    for (const MemberFuncs& m : members_)
      if (m.tiled_matmul && m.a_member >= 0 && stage_of(members_[m.a_member], StageRole::Statistic))
        materialise(members_[m.a_member].outputs[0].func.name());
    // The MatMuls tiled on the cube, and the buffer whose tiles carry each (fused_schedule.h's rule).
    for (const MemberFuncs& m : members_) {
      if (!m.tiled_matmul || !stage_of(m, StageRole::Accumulator) || !m.outputs[0].defined()) continue;
      const TensorFunc& mm = m.outputs[0];
      int carrier = -1;
      for (size_t r = 0; r < roots_.size(); ++r)
        if (roots_[r].compute.name() == mm.func.name()) carrier = static_cast<int>(r);
      const TensorFunc* only = outputs_.size() == 1 ? &outputs_[0] : nullptr;
      if (carrier < 0 && only && !stats && m.decisions[0].decision != ComputeDecision::Root && !roots_[0].cube &&
          trailing_match(only->shape, mm.shape))
        carrier = 0;
      if (carrier < 0) carrier = materialise(mm.func.name());
      roots_[carrier].cube = &m;
    }
  }

  static bool trailing_match(const Shape& a, const Shape& b) {
    return a.size() >= 2 && b.size() >= 2 && std::equal(a.end() - 2, a.end(), b.end() - 2);
  }

  // Makes `name` a GM buffer of its own (a direct root); returns its index.
  int materialise(const std::string& name) {
    for (size_t r = 0; r < roots_.size(); ++r) {
      if (roots_[r].compute.name() != name) continue;
      roots_[r].direct = true;  // an output others read: computed straight into its buffer
      roots_[r].gm = roots_[r].compute;
      output_gm_[roots_[r].output] = roots_[r].gm;
      return static_cast<int>(r);
    }
    Root r;
    r.compute = r.gm = funcs_.at(name);
    r.direct = true;
    auto s = shape_of_.find(name);
    if (s != shape_of_.end())
      r.shape = s->second;
    else
      r.unknown_shape = true;
    roots_.push_back(r);
    computed_.erase(name);
    return static_cast<int>(roots_.size() - 1);
  }

  // What a buffer's tiles reach through inlined Funcs: the computed Funcs, and per GM source the
  // Funcs reading it through UB (not those reading directly: layout ops, operand copies).
  struct Reach {
    std::set<std::string> computed, visited;
    std::map<std::string, std::set<std::string>> ub_reads;  // GM source -> readers
    std::set<std::string> operand_funcs;
    std::set<std::string> gm_readers;  // visited Funcs that read a GM source themselves
  };

  Reach reach(size_t r) const {
    Reach out;
    const Root& root = roots_[r];
    std::function<void(const Func&, bool)> walk = [&](const Func& f, bool direct_ctx) {
      if (!out.visited.insert(f.name()).second) return;
      for (const auto& [name, fn] : Internal::find_direct_calls(f.function())) {
        if (is_gm_source(name) && name != root.gm.name()) {
          out.gm_readers.insert(f.name());
          if (!direct_ctx) out.ub_reads[name].insert(f.name());
          continue;
        }
        auto known = funcs_.find(name);
        if (known == funcs_.end()) continue;  // a wrapper made here, or an ImageParam's own Func
        bool is_operand = root.cube && member_of_.count(name) && member_of_.at(name) == root.cube &&
                          (name == stage_name(*root.cube, 0) || name == stage_name(*root.cube, 1));
        if (is_operand) out.operand_funcs.insert(name);
        if (computed_.count(name)) out.computed.insert(name);
        walk(known->second, direct_ctx || is_operand);
      }
    };
    walk(root.compute, false);
    return out;
  }

  // The a (0) or b (1) operand stage of a MatMul member.
  static std::string stage_name(const MemberFuncs& m, int which) {
    int seen = 0;
    for (const Stage& s : m.stages)
      if (s.role == StageRole::Operand && seen++ == which) return s.func.name();
    return "";
  }

  // A shared MatMul is materialised with as much of its epilogue as every reader shares: from its
  // output up a chain of inlined elementwise Funcs of the same shape, each the only reader of
  // the one before (the wide Q|K|V's bias Add before the Slices that read it).
  std::string epilogue_end(const std::string& mm) const {
    std::string end = mm;
    for (;;) {
      std::vector<std::string> readers;
      for (const auto& [name, f] : funcs_)
        if (name != end && Internal::find_direct_calls(f.function()).count(end)) readers.push_back(name);
      if (readers.size() != 1) return end;
      const std::string& r = readers[0];
      if (layout_.count(r) || computed_.count(r) || !shape_of_.count(r) || shape_of_.at(r) != shape_of_.at(mm))
        return end;
      bool is_output = false;
      for (const TensorFunc& t : outputs_) is_output = is_output || t.func.name() == r;
      if (is_output) return end;
      end = r;
    }
  }

  // A computed Func (or an output, or a Func reading GM through UB) that the tiles of several
  // buffers reach is materialised in GM: a per-tile Func must belong to one loop nest.
  void resolve_shared() {
    for (bool changed = true; changed;) {
      changed = false;
      std::map<std::string, int> reached_by;
      for (size_t r = 0; r < roots_.size(); ++r) {
        Reach re = reach(r);
        std::set<std::string> mine = re.computed;
        for (const std::string& f : re.gm_readers) mine.insert(f);
        for (const Root& o : roots_)
          if (!o.direct && re.visited.count(o.compute.name()) && o.compute.name() != roots_[r].compute.name())
            mine.insert(o.compute.name());
        for (const std::string& f : mine) ++reached_by[f];
      }
      for (const auto& [name, n] : reached_by) {
        if (n < 2) continue;
        auto acc = acc_member_.find(name);
        std::string target = acc != acc_member_.end() ? epilogue_end(acc->second->outputs[0].func.name()) : name;
        int r = materialise(target);
        if (acc != acc_member_.end()) roots_[r].cube = acc->second;
        changed = true;
        break;
      }
    }
  }

  // ---- one GM buffer's tiles ----------------------------------------------------------------
  void schedule_root(size_t r, NpuSchedule& out) {
    Root& root = roots_[r];
    Reach re = reach(r);
    Func gm = root.gm;
    std::vector<Func> ub;  // Funcs realised in UB per tile
    // Staging copies GM -> UB, one per GM source, for the Funcs of this buffer that read it.
    std::vector<Func> copies;
    std::vector<UbResident> residents;  // what the tile holds in UB, for the tile size
    for (const auto& [src, readers] : re.ub_reads) {
      std::vector<Func> rf;
      for (const std::string& f : readers) rf.push_back(f == gm.name() ? gm : funcs_.at(f));
      copies.push_back(gm_in(src, rf));
      const Shape& s = source_shape(src);
      residents.push_back(UbResident{!s.empty() && s.back() > 1, s.size() >= 2 && s[s.size() - 2] > 1});
    }
    std::vector<Func> owned;
    const Stage* acc = root.cube ? stage_of(*root.cube, StageRole::Accumulator) : nullptr;
    for (const std::string& c : re.computed) {
      if (acc && c == acc->func.name()) continue;
      owned.push_back(funcs_.at(c));
      // A reduction's result (a row statistic) has one value per row.
      residents.push_back(UbResident{!owned.back().has_update_definition(), true});
    }
    if (!root.direct) residents.push_back(UbResident{});
    const int64_t eb = elem_bytes(gm);

    NpuTileChoice tile;
    LoopLevel at = LoopLevel::root();  // one tile (L0C, and UB for vector work)
    LoopLevel ub_at = at;              // one UB block: for cube tiles, a block of the tile's rows
    if (!root.unknown_shape && !root.shape.empty()) {
      if (acc) {
        tile = choose_cube_tile(label_, root.shape, acc_k(*acc), residents, eb, t_, p_);
        NpuTileLevels levels = apply_cube_tile(gm, tile);
        at = levels.tile;
        ub_at = levels.ub;
      } else {
        tile = choose_row_tile(label_, root.shape, has_row_reduction(re), residents, eb, t_, p_);
        at = ub_at = apply_row_tile(gm, tile);
      }
      out.tiles.push_back(gm.name() + ": " + tile.describe);
    } else {
      gm.compute_root();
    }
    gm.compute_root();
    gm.trace_stores();
    double gm_ops = 0;
    if (root.direct) gm_ops = ops(gm);
    out.stages[gm.name()] = NpuFuncInfo{NpuRole::Gm, static_cast<int>(eb), gm_ops};

    auto place = [&](Func f, NpuRole role, bool tile_unit) {
      f.compute_at(ub_at);
      f.trace_realizations();
      vectorize_inner(f);
      NpuFuncInfo info{role, elem_bytes(f), role == NpuRole::UbCompute ? ops(f) : 0, tile_unit};
      out.stages[f.name()] = info;
    };
    bool tile_marked = false;
    if (acc) {
      schedule_cube(*root.cube, *acc, tile, at, out);
      tile_marked = true;
    }
    if (!root.direct) {
      place(root.compute, NpuRole::UbCompute, !tile_marked);
      tile_marked = true;
    }
    for (Func f : owned) place(f, NpuRole::UbCompute, false);
    for (Func w : copies) {
      place(w, NpuRole::UbCopy, !tile_marked);
      tile_marked = true;
    }
  }

  Func gm_in(const std::string& src, const std::vector<Func>& readers) {
    for (const NpuGroupInput& in : inputs_)
      if (in.param.defined() && Func(in.param).name() == src) {
        ImageParam p = in.param;
        return p.in(readers);
      }
    return funcs_.count(src) ? funcs_.at(src).in(readers) : Func();
  }

  const Shape& source_shape(const std::string& src) const {
    static const Shape none;
    for (const NpuGroupInput& in : inputs_)
      if (in.param.defined() && Func(in.param).name() == src) return in.shape;
    for (const Root& r : roots_)
      if (r.direct && r.gm.name() == src) return r.shape;
    return none;
  }

  bool has_row_reduction(const Reach& re) const {
    for (const std::string& c : re.computed)
      if (funcs_.at(c).has_update_definition()) return true;
    return false;
  }

  static int64_t acc_k(const Stage& acc) {
    const int64_t* k = acc.reduction.empty() ? nullptr : as_const_int(acc.reduction[0].extent());
    return k ? *k : 0;
  }

  double ops(const Func& f) {
    OpCounter c([&](const std::string& name) {
      return funcs_.count(name) && !computed_.count(name) && !constants_.count(name) && !is_gm_source(name);
    });
    return c.count(f.function());
  }

  // For the host's speed only (the counts do not depend on it). Reductions stay scalar.
  static void vectorize_inner(Func f) {
    std::vector<Var> a = f.args();
    if (!a.empty() && !f.has_update_definition()) f.vectorize(a[0], 16, TailStrategy::GuardWithIf);
  }

  // acc in L0C per output tile; k in L1 panels of kL1 and L0 blocks of kL0; the operands copied
  // GM -> L1 per panel and L1 -> L0A/L0B per block.
  void schedule_cube(const MemberFuncs& m, const Stage& acc_stage, const NpuTileChoice& tile, const LoopLevel& at,
                     NpuSchedule& out) {
    Func acc = acc_stage.func;
    acc.compute_at(at).trace_realizations();
    out.stages[acc.name()] = NpuFuncInfo{NpuRole::L0C, elem_bytes(acc), 0, true};
    if (acc_stage.reduction.empty() || tile.k_l0 == 0) return;
    std::vector<Var> ca = acc.args();
    RVar k = acc_stage.reduction[0];
    RVar k1(k.name() + "_l1"), kr(k.name() + "_r"), k0(k.name() + "_l0"), ki(k.name() + "_in");
    Halide::Stage u = acc.update();
    u.split(k, k1, kr, static_cast<int>(tile.k_l1)).split(kr, k0, ki, static_cast<int>(tile.k_l0));
    u.reorder(ca[0], ca[1], ki, k0, k1);
    if (tile.n % 16 == 0) {
      acc.vectorize(ca[0], 16);
      u.vectorize(ca[0], 16);
    }
    Func a_op = funcs_.at(stage_name(m, 0)), b_op = funcs_.at(stage_name(m, 1));
    for (auto [op, l0_role] : {std::pair{a_op, NpuRole::L0A}, std::pair{b_op, NpuRole::L0B}}) {
      Func l0 = op.in(acc);
      op.compute_at(acc, k1).trace_realizations();
      vectorize_inner(op);
      out.stages[op.name()] = NpuFuncInfo{NpuRole::L1, elem_bytes(op)};
      l0.compute_at(acc, k0).trace_realizations();
      vectorize_inner(l0);
      out.stages[l0.name()] = NpuFuncInfo{l0_role, elem_bytes(l0)};
    }
  }

  const std::string label_;
  const std::vector<TensorFunc>& outputs_;
  const std::vector<MemberFuncs>& members_;
  const std::vector<NpuGroupInput>& inputs_;
  const NpuTarget& t_;
  const NpuScheduleParams p_;
  std::map<std::string, Func> funcs_;
  std::map<std::string, const MemberFuncs*> member_of_, acc_member_;
  std::map<std::string, Shape> shape_of_;
  std::set<std::string> gm_inputs_, computed_, layout_, constants_;
  std::vector<Root> roots_;
  std::vector<Func> output_gm_;
};

}  // namespace

NpuSchedule apply_npu_schedule(const std::string& label, const std::vector<TensorFunc>& outputs,
                               const std::vector<MemberFuncs>& members, const std::vector<NpuGroupInput>& inputs,
                               const NpuTarget& target, const NpuScheduleParams& params) {
  return NpuScheduler(label, outputs, members, inputs, target, params).run();
}

}  // namespace gaf
