// The ranks of a tensor-parallel run: the collectives its AllReduce/AllGather nodes need, and
// memory that ranks on one machine share.
// The executors see only this interface: `MpiCommunicator` (runtime/mpi_communicator.h) runs
// them over OpenMPI between processes; a run without one is a single rank, where every
// collective is the identity. No MPI here, so the planner, the executors and the CLI do not
// need mpi.h to compile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gaf {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every collective is called by every rank in the same order. `what` names the node or step
  // for error messages (a rank that dies or never arrives ends the call with a GafError naming
  // it, after the communicator's timeout, instead of a hang).

  // Sums `count` floats element-wise across ranks, in place.
  virtual void all_reduce_sum(float* data, int64_t count, const std::string& what) = 0;
  // `send` holds size() blocks of `block` floats; `recv` (block floats) receives the sum over
  // ranks of every rank's block rank().
  virtual void reduce_scatter_sum(const float* send, float* recv, int64_t block, const std::string& what) = 0;
  // `data` holds size() blocks of `block_bytes` bytes, this rank's block at rank(); afterwards
  // every block holds its rank's bytes.
  virtual void all_gather(void* data, int64_t block_bytes, const std::string& what) = 0;
  // Every rank passes its value; GafError on each rank naming the ranks whose values differ
  // (ranks that loaded different models or plans are refused before any work).
  virtual void check_same(uint64_t value, const std::string& what) = 0;
  // Waits until every rank has arrived.
  virtual void barrier(const std::string& what) = 0;

  // Ranks on one machine can read each other's memory. A collective: allocates `bytes` on every
  // rank and returns every rank's block in rank order, readable and writable by all, valid as
  // long as the communicator; empty when the ranks do not share memory (then only the
  // collectives above move data). What one rank stored before a barrier(), the others see after it.
  // Each block starts on a 64-byte boundary, as every tensor the kernels read or write does.
  virtual std::vector<void*> shared_blocks(int64_t bytes, const std::string& what) {
    (void)bytes;
    (void)what;
    return {};
  }
};

}  // namespace gaf
