#include "apps/gaf/parallel_job.h"

#include <string>

#include "runtime/mpi_communicator.h"
#include "runtime/tensor.h"

namespace gaf::cli {

namespace {
std::shared_ptr<Communicator>& job() {
  static std::shared_ptr<Communicator> comm;
  return comm;
}
}  // namespace

std::shared_ptr<Communicator> join_parallel_job(int tp, double timeout_seconds) {
  if (tp < 1 || tp > 4096) throw GafError("--tp must be in 1..4096, got " + std::to_string(tp));
  if (!(timeout_seconds > 0 && timeout_seconds <= 86400))
    throw GafError("--comm-timeout must be in (0, 86400] seconds");
  if (tp == 1 || !mpi_launched()) return nullptr;
  if (!job()) job() = MpiCommunicator::create(timeout_seconds);
  if (job()->size() != tp)
    throw GafError("--tp " + std::to_string(tp) + " but mpirun started " + std::to_string(job()->size()) +
                   " ranks (use mpirun -np " + std::to_string(tp) + ")");
  return job();
}

void leave_parallel_job() { job().reset(); }

int job_rank() { return job() ? job()->rank() : 0; }

void end_parallel_job_on_error(int code) {
  if (!job() || job()->size() < 2) return;
  MpiCommunicator::abort(code);
}

}  // namespace gaf::cli
