// mpi_launched(): in its own file because the MPI build and the stub both need it.
#include <cstdlib>

#include "runtime/mpi_communicator.h"

namespace gaf {

bool mpi_launched() {
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMI/PMIx launchers (srun, hydra) the others.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

}  // namespace gaf
