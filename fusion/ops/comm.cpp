// Collectives: AllReduce (sum) and AllGather, as onnxruntime's com.microsoft ops spell them
// (attribute group_size: the ranks taking part) and as the tensor-parallel rewrite inserts them
// (fusion/planner/tensor_parallel.h). Op class Comm: the planner never merges them generically,
// and the executors run them through a Communicator (generators/comm_kernel.h) rather than as
// Halide pipelines. The algorithms here are the single-rank case (group_size 1: the identity),
// which is all a Halide pipeline can compute.
#include "fusion/ops/families.h"
#include "fusion/ops/op_builder.h"

namespace gaf {

using namespace Halide;

namespace {

int64_t group_size(const InferContext& c) {
  const int64_t p = c.attrs().get_int("group_size", 1);
  c.check(p >= 1 && p <= 4096, "group_size must be in 1..4096, got " + std::to_string(p));
  return p;
}

void build_identity(BuildContext& b) {
  if (group_size(b.infer()) != 1)
    b.infer().fail("a collective over " + std::to_string(group_size(b.infer())) +
                   " ranks cannot run as a kernel (it runs through the communicator)");
  const TensorFunc& x = b.in(0);
  std::vector<Var> v = b.vars(x.rank());
  b.define_output(0, v, x(v));
}

}  // namespace

int64_t all_gather_axis(const InferContext& c) { return c.axis(c.attrs().get_int("axis", 0), c.rank(0)); }

void register_comm_ops(OpRegistry& r) {
  OpSchema reduce;
  reduce.name = "AllReduce";
  reduce.op_class = OpClass::Comm;
  reduce.foldable = false;
  reduce.infer = [](const InferContext& c) {
    group_size(c);
    c.check(c.dtype(0) == DType::Float32, "only float32 is reduced, got " + std::string(dtype_name(c.dtype(0))));
    const std::string op = c.attrs().get_string("reduce_op", "sum");
    c.check(op == "sum", "reduce_op '" + op + "' is not supported (sum is)");
    return std::vector<TensorDesc>{{c.dtype(0), c.shape(0)}};
  };
  reduce.build = build_identity;
  r.add(std::move(reduce));

  OpSchema gather;
  gather.name = "AllGather";
  gather.op_class = OpClass::Comm;
  gather.foldable = false;
  gather.infer = [](const InferContext& c) {
    const int64_t p = group_size(c);
    Shape s = c.shape(0);
    const int64_t axis = all_gather_axis(c);
    s[static_cast<size_t>(axis)] = checked_mul(s[static_cast<size_t>(axis)], p, "AllGather output");
    return std::vector<TensorDesc>{{c.dtype(0), s}};
  };
  gather.build = build_identity;
  r.add(std::move(gather));
}

}  // namespace gaf
