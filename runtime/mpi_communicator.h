// The Communicator of a tensor-parallel run over OpenMPI: one process per rank, started by
// `mpirun -np P`. Every collective is non-blocking underneath and polled against a deadline, so
// a rank that died, stopped or never arrived ends the call with a GafError instead of a hang.
// No mpi.h here: the MPI handles live in the .cpp. A build without MPI links a stub whose
// create() throws.
#pragma once

#include <memory>

#include "runtime/communicator.h"

namespace gaf {

// True when the environment says this process was started by mpirun/srun (OMPI_COMM_WORLD_SIZE,
// PMI_SIZE or PMIX_RANK set). Does not initialise MPI, so the CLI can ask before choosing.
bool mpi_launched();

class MpiCommunicator : public Communicator {
 public:
  // Initialises MPI once per process (finalised at exit) and returns a communicator over a
  // duplicate of MPI_COMM_WORLD whose collectives give up after `timeout_seconds`.
  static std::unique_ptr<Communicator> create(double timeout_seconds);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void all_reduce_sum(float* data, int64_t count, const std::string& what) override;
  void reduce_scatter_sum(const float* send, float* recv, int64_t block, const std::string& what) override;
  void all_gather(void* data, int64_t block_bytes, const std::string& what) override;
  void check_same(uint64_t value, const std::string& what) override;
  void barrier(const std::string& what) override;
  // An MPI-3 shared-memory window when every rank is on this node (MPI_Comm_split_type).
  std::vector<void*> shared_blocks(int64_t bytes, const std::string& what) override;

  // Ends every rank of the job with exit code `code` (MPI_Abort on the world), for the CLI after
  // it printed an error: the other ranks are killed rather than left waiting in a collective.
  // Static, so it needs no downcast from Communicator; without MPI initialised it exits.
  [[noreturn]] static void abort(int code);

 private:
  struct State;  // the MPI handles (mpi_communicator.cpp)

  MpiCommunicator(std::unique_ptr<State> state, int rank, int size, double timeout_seconds);

  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_seconds_ = 0;
};

}  // namespace gaf
