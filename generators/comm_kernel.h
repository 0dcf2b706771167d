// Kernels of groups that hold a collective (op class Comm: AllReduce, AllGather). They are not
// one Halide pipeline: the collective runs through the Communicator and the compute around it
// through an ordinary group kernel.
//  - A collective alone (the unfused path, or an imported com.microsoft op): the collective on
//    the whole tensor.
//  - comm_compute (fusion/planner/rules_comm.cpp), AllReduce then bias/residual/norm: the rest
//    of the group, compiled for this rank's block of rows (a small graph typed at the local
//    shape), runs on this rank's rows only. Ranks on one machine read each other's partial sums
//    from shared memory and add them in that kernel; otherwise a reduce-scatter comes before it
//    and an all-gather of the group's outputs after it.
#pragma once

#include <memory>
#include <vector>

#include "generators/group_kernel.h"

namespace gaf {

// The group has a collective across more than one rank (with group_size 1 a collective is the
// identity and compiles into an ordinary kernel).
bool needs_communicator(const Graph& g, const FusionGroup& grp);

// Requires needs_communicator(g, grp).
std::unique_ptr<GroupKernel> compile_comm_group_kernel(const Graph& g, const FusionGroup& grp,
                                                       const KernelOptions& opts);

// One collective node on whole tensors (the reference executor and the lone-collective kernel).
// `comm` may be null only when the node's group_size is 1. GafError naming the node otherwise.
void run_collective(Communicator* comm, const Node& node, const Tensor& in, Tensor& out);

}  // namespace gaf
