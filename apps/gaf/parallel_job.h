// The tensor-parallel job a gaf process belongs to (`--tp P` under `mpirun -np P`).
#pragma once

#include <memory>

#include "runtime/communicator.h"

namespace gaf::cli {

// The communicator of this process's job: null with tp 1, and when the process was not started
// by mpirun (plan/report/explain then show rank 0's plan; running refuses with a one-line hint).
// GafError when mpirun started a different number of ranks than `tp`.
std::shared_ptr<Communicator> join_parallel_job(int tp, double timeout_seconds);

// This process's rank (0 outside a job).
int job_rank();

// Ends this process's part of the job normally: the communicator (and its shared windows) is
// released before MPI is finalised at exit. Call once the command is done.
void leave_parallel_job();

// After an error was printed: ends the whole job (MPI_Abort) so that no other rank waits for
// this one until its timeout. Does nothing outside a job of several ranks.
void end_parallel_job_on_error(int code);

}  // namespace gaf::cli
