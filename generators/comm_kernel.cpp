#include "generators/comm_kernel.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "fusion/ops/registry.h"
#include "fusion/planner/group_info.h"
#include "fusion/planner/rules_comm.h"

namespace gaf {

namespace {

int64_t group_size_of(const Node& n) { return n.attrs.get_int("group_size", 1); }

// The communicator a collective node runs on, checked against the node's group_size.
Communicator* communicator_for(Communicator* comm, const Node& n) {
  const int64_t p = group_size_of(n);
  const int have = comm ? comm->size() : 1;
  if (p != have)
    throw GafError(
        n.op_type + " '" + n.name + "' runs across " + std::to_string(p) + " ranks but this run has " +
        std::to_string(have) +
        (have == 1 ? " (start it with mpirun -np " + std::to_string(p) + " ... --tp " + std::to_string(p) + ")" : ""));
  return p == 1 ? nullptr : comm;
}

Shape shape_of(const Graph& g, const std::string& v) { return g.value(v).type.shape(); }

class CollectiveKernel : public GroupKernel {
 public:
  CollectiveKernel(const Graph& g, const FusionGroup& grp, Communicator* comm) : node_(g.nodes()[grp.nodes.at(0)]) {
    communicator_for(comm, node_);
    comm_ = comm;
    descs_.push_back({g.value(grp.outputs.at(0)).type.dtype, shape_of(g, grp.outputs[0])});
  }
  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, const SymBindings&) override {
    run_collective(comm_, node_, *inputs.at(0), outputs.at(0));
  }
  const std::vector<TensorDesc>& output_descs() const override { return descs_; }
  const std::string& schedule_fallback() const override { return none_; }

 private:
  Node node_;
  Communicator* comm_ = nullptr;
  std::vector<TensorDesc> descs_;
  std::string none_;
};

// AllReduce, then the rest of the group on this rank's rows (see comm_kernel.h).
class CommComputeKernel : public GroupKernel {
 public:
  CommComputeKernel(const Graph& g, const FusionGroup& grp, const KernelOptions& opts)
      : reduce_(g.nodes()[grp.nodes.at(0)]), comm_(opts.comm) {
    if (reduce_.op_type != "AllReduce")
      throw GafError("internal: group g" + std::to_string(grp.id) + " starts with " + reduce_.op_type +
                     ", not AllReduce");
    communicator_for(comm_, reduce_);
    const int64_t P = comm_->size();
    const Shape full = shape_of(g, reduce_.outputs[0]);
    const int axis = comm_row_split_axis(full, P);
    if (axis < 0)
      throw GafError("internal: group g" + std::to_string(grp.id) + ": rows of " + shape_str(full) +
                     " do not split into " + std::to_string(P) + " ranks");
    Shape local = full;
    local[static_cast<size_t>(axis)] /= P;
    // Ranks that share memory read each other's partial sums directly, and the sum joins the
    // kernel (no reduce-scatter); each writes its rows of the outputs where the others read them.
    shared_partials_ = comm_->shared_blocks(byte_size(DType::Float32, full), reduce_.name + " partial sums");
    if (!shared_partials_.empty())
      for (const std::string& o : grp.outputs)
        shared_outputs_.push_back(comm_->shared_blocks(byte_size(g.value(o).type.dtype, full), o));

    // The rest of the group as a graph of its own, typed at this rank's rows.
    Graph sub;
    sub.name = g.name + "/g" + std::to_string(grp.id) + ".rows";
    std::set<std::string> produced;
    for (size_t k = 1; k < grp.nodes.size(); ++k)
      for (const std::string& o : g.nodes()[grp.nodes[k]].outputs) produced.insert(o);
    for (size_t k = 1; k < grp.nodes.size(); ++k) {
      const Node& n = g.nodes()[grp.nodes[k]];
      for (const std::string& in : n.inputs) {
        if (in.empty() || produced.count(in) || sub.has_value(in)) continue;
        const Value& v = g.value(in);
        const Shape s = v.type.shape();
        const int row_pos = axis - static_cast<int>(full.size() - s.size());
        if (v.constant && (row_pos < 0 || s[static_cast<size_t>(row_pos)] == 1)) {
          sub.add_initializer(in, *v.constant);  // the same for every row; still a kernel input
          access_[in] = Access::Whole;
          continue;
        }
        if (in == reduce_.outputs[0] && !shared_partials_.empty()) {
          // in = partial@rank0 + partial@rank1 + ..., each this rank's rows of that rank's block
          std::string sum;
          for (int64_t p = 0; p < P; ++p) {
            const std::string part = in + "@rank" + std::to_string(p);
            access_[part] = Access::Peer;
            peer_of_[part] = static_cast<int>(p);
            sub.add_value(part, TensorType(DType::Float32, local));
            sub.inputs().push_back(part);
            if (p == 0) {
              sum = part;
              continue;
            }
            const std::string next = p + 1 == P ? in : in + "@sum" + std::to_string(p);
            TensorType unknown;
            unknown.rank_known = false;
            sub.add_value(next, unknown);
            Node add;
            add.name = reduce_.name + "/sum" + std::to_string(p);
            add.op_type = "Add";
            add.inputs = {sum, part};
            add.outputs = {next};
            sub.add_node(add);
            sum = next;
          }
          continue;
        }
        Access access = Access::Whole;
        if (in == reduce_.outputs[0])
          access = Access::Reduced;
        else if (s == full)
          access = Access::Rows;  // a constant too: each rank reads its rows
        else if (row_pos >= 0 && s[static_cast<size_t>(row_pos)] != 1)
          throw GafError("group g" + std::to_string(grp.id) + ": input '" + in + "' " + shape_str(s) +
                         " is neither whole rows of " + shape_str(full) + " nor the same for every row");
        access_[in] = access;
        sub.add_value(in, TensorType(v.type.dtype, access == Access::Whole ? s : local));
        sub.inputs().push_back(in);
      }
      for (const std::string& o : n.outputs) {
        TensorType unknown;
        unknown.rank_known = false;
        if (!o.empty()) sub.add_value(o, unknown);
      }
      sub.add_node(n);
    }
    for (const std::string& o : grp.outputs) {
      if (!produced.count(o) || shape_of(g, o) != full)
        throw GafError("internal: group g" + std::to_string(grp.id) + " output '" + o +
                       "' is not a row tensor of its tail");
      sub.outputs().push_back(o);
      descs_.push_back({g.value(o).type.dtype, full});
    }
    infer_shapes(sub);
    sub.validate();
    tail_.id = grp.id;
    tail_.kind = grp.kind;
    tail_.rule = grp.rule;
    for (int i = 0; i < static_cast<int>(sub.nodes().size()); ++i) tail_.nodes.push_back(i);
    describe_group(GraphView(sub), tail_);
    KernelOptions local_opts = opts;
    local_opts.comm = nullptr;
    inner_ = compile_group_kernel(sub, tail_, local_opts);
    reduced_ = Tensor::uninitialized(DType::Float32, local);
    for (size_t k = 0; k < grp.inputs.size(); ++k) input_index_[grp.inputs[k]] = k;
    if (!input_index_.count(reduce_.inputs[0]))
      throw GafError("internal: group g" + std::to_string(grp.id) + " does not read its AllReduce's input");
    outputs_ = grp.outputs;
  }

  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, const SymBindings&) override {
    const int r = comm_->rank(), P = comm_->size();
    const Tensor& partial = *inputs.at(input_index_.at(reduce_.inputs[0]));
    const bool shared = !shared_partials_.empty();
    if (shared) {
      std::memcpy(shared_partials_[static_cast<size_t>(r)], partial.raw(), partial.nbytes());
      comm_->barrier(reduce_.name);  // every rank's partial sums are in place
    } else {
      comm_->reduce_scatter_sum(partial.data<float>(), reduced_.data<float>(), reduced_.numel(), reduce_.name);
    }
    ins_.clear();
    parts_.clear();
    parts_.reserve(tail_.inputs.size());
    for (const std::string& in : tail_.inputs) {
      switch (access_.at(in)) {
        case Access::Reduced: ins_.push_back(&reduced_); break;
        case Access::Peer: {
          auto* block = static_cast<uint8_t*>(shared_partials_[static_cast<size_t>(peer_of_.at(in))]);
          parts_.push_back(borrowed(block + partial.nbytes() / P * r, DType::Float32, reduced_.shape()));
          ins_.push_back(&parts_.back());
          break;
        }
        case Access::Whole: ins_.push_back(inputs.at(input_index_.at(in))); break;
        case Access::Rows: {
          const Tensor& t = *inputs.at(input_index_.at(in));
          parts_.push_back(t.part(static_cast<int64_t>(t.nbytes() / P) * r, reduced_.shape()));
          ins_.push_back(&parts_.back());
          break;
        }
      }
    }
    outs_.clear();
    for (const std::string& o : tail_.outputs) {
      const size_t k = static_cast<size_t>(std::find(outputs_.begin(), outputs_.end(), o) - outputs_.begin());
      const Tensor& t = outputs.at(k);
      const size_t rows_bytes = t.nbytes() / static_cast<size_t>(P);
      if (shared)
        outs_.push_back(borrowed(static_cast<uint8_t*>(shared_outputs_[k][static_cast<size_t>(r)]) + rows_bytes * r,
                                 t.dtype(), reduced_.shape()));
      else
        outs_.push_back(t.part(static_cast<int64_t>(rows_bytes) * r, reduced_.shape()));
    }
    inner_->run(ins_, outs_);
    if (!shared) {
      for (size_t k = 0; k < outputs.size(); ++k)
        comm_->all_gather(outputs[k].raw(), static_cast<int64_t>(outputs[k].nbytes() / P), outputs_[k]);
      return;
    }
    comm_->barrier(reduce_.name);  // every rank's rows are written
    for (size_t k = 0; k < outputs.size(); ++k) {
      const size_t rows_bytes = outputs[k].nbytes() / static_cast<size_t>(P);
      for (int p = 0; p < P; ++p)
        std::memcpy(static_cast<uint8_t*>(outputs[k].raw()) + rows_bytes * p,
                    static_cast<const uint8_t*>(shared_outputs_[k][static_cast<size_t>(p)]) + rows_bytes * p,
                    rows_bytes);
    }
  }
  const std::vector<TensorDesc>& output_descs() const override { return descs_; }
  const std::string& schedule_fallback() const override { return inner_->schedule_fallback(); }
  // The NPU tile model counts the rows' kernel (its collectives are modeled by the profiler).
  const NpuStageMap* npu_stages() const override { return inner_->npu_stages(); }
  std::vector<std::string> npu_tiles() const override { return inner_->npu_tiles(); }

 private:
  // The reduce-scatter's block, one rank's partial sums in shared memory, this rank's rows, all of it.
  enum class Access { Reduced, Peer, Rows, Whole };
  // A tensor over memory this kernel does not own (a shared block).
  static Tensor borrowed(uint8_t* p, DType dtype, const Shape& shape) {
    return Tensor::in_storage(dtype, shape, std::shared_ptr<uint8_t>(std::shared_ptr<uint8_t>(), p));
  }
  std::vector<void*> shared_partials_;              // per rank, its partial sums (shared memory)
  std::vector<std::vector<void*>> shared_outputs_;  // per output, per rank: its rows written there
  std::map<std::string, int> peer_of_;
  Node reduce_;
  Communicator* comm_;
  FusionGroup tail_;
  std::unique_ptr<GroupKernel> inner_;
  std::map<std::string, Access> access_;
  std::map<std::string, size_t> input_index_;
  std::vector<std::string> outputs_;
  std::vector<TensorDesc> descs_;
  Tensor reduced_;
  std::vector<const Tensor*> ins_;
  std::vector<Tensor> parts_, outs_;
};

}  // namespace

bool needs_communicator(const Graph& g, const FusionGroup& grp) {
  for (int n : grp.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    if (is_collective(node) && group_size_of(node) > 1) return true;
  }
  return false;
}

std::unique_ptr<GroupKernel> compile_comm_group_kernel(const Graph& g, const FusionGroup& grp,
                                                       const KernelOptions& opts) {
  if (!g.dynamic.empty())
    throw GafError("group g" + std::to_string(grp.id) + ": collectives with dynamic dims are not supported yet");
  if (grp.nodes.size() == 1) return std::make_unique<CollectiveKernel>(g, grp, opts.comm);
  return std::make_unique<CommComputeKernel>(g, grp, opts);
}

void run_collective(Communicator* comm, const Node& node, const Tensor& in, Tensor& out) {
  comm = communicator_for(comm, node);
  if (out.raw() != in.raw() && in.nbytes() > 0 && node.op_type == "AllReduce")
    std::memcpy(out.raw(), in.raw(), in.nbytes());
  if (node.op_type == "AllReduce") {
    if (comm) comm->all_reduce_sum(out.data<float>(), out.numel(), node.name);
    return;
  }
  if (node.op_type != "AllGather") throw GafError("node '" + node.name + "': " + node.op_type + " is not a collective");
  // AllGather along `axis`: every rank's [outer, local, inner] block gathered rank-major, then
  // interleaved into [outer, P * local, inner].
  const int P = comm ? comm->size() : 1, r = comm ? comm->rank() : 0;
  const int64_t rank = in.rank();
  const int64_t axis = (node.attrs.get_int("axis", 0) % rank + rank) % rank;
  int64_t outer = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= in.shape()[static_cast<size_t>(a)];
  const size_t chunk = in.nbytes() / static_cast<size_t>(std::max<int64_t>(outer, 1));
  Tensor staged(DType::UInt8, {static_cast<int64_t>(in.nbytes()) * P});  // zeroed: defined without peers (NPU model)
  auto* st = static_cast<uint8_t*>(staged.raw());
  if (in.nbytes() > 0) std::memcpy(st + static_cast<size_t>(r) * in.nbytes(), in.raw(), in.nbytes());
  if (comm) comm->all_gather(st, static_cast<int64_t>(in.nbytes()), node.name);
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int p = 0; p < P; ++p)
      std::memcpy(dst + (static_cast<size_t>(o) * P + static_cast<size_t>(p)) * chunk,
                  st + static_cast<size_t>(p) * in.nbytes() + static_cast<size_t>(o) * chunk, chunk);
}

}  // namespace gaf
