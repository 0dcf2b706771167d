// MpiCommunicator in a build without MPI: create() refuses with the way to get it. The members
// exist only so the class links; no instance is ever made.
#include <cstdio>
#include <cstdlib>

#include "runtime/mpi_communicator.h"
#include "runtime/tensor.h"

namespace gaf {

struct MpiCommunicator::State {};

std::unique_ptr<Communicator> MpiCommunicator::create(double) {
  throw GafError("this gaf was built without MPI (install libopenmpi-dev and rebuild)");
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<State> state, int rank, int size, double timeout_seconds)
    : state_(std::move(state)), rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}
MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::all_reduce_sum(float*, int64_t, const std::string&) {}
void MpiCommunicator::reduce_scatter_sum(const float*, float*, int64_t, const std::string&) {}
void MpiCommunicator::all_gather(void*, int64_t, const std::string&) {}
void MpiCommunicator::check_same(uint64_t, const std::string&) {}
void MpiCommunicator::barrier(const std::string&) {}
std::vector<void*> MpiCommunicator::shared_blocks(int64_t, const std::string&) { return {}; }

void MpiCommunicator::abort(int code) {
  std::fflush(nullptr);
  std::exit(code);
}

}  // namespace gaf
