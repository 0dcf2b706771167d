// MpiCommunicator over OpenMPI: every collective is the non-blocking MPI call, polled with
// MPI_Test until it completes or the communicator's deadline passes.
#include "runtime/mpi_communicator.h"

// The C API only: OpenMPI's and MPICH's mpi.h otherwise pull in the C++ bindings, which need
// libmpi_cxx (MPI::MPI_C links the C library only).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "runtime/tensor.h"

namespace gaf {
namespace {

using Clock = std::chrono::steady_clock;

std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, len);
}

// MPI initialised once per process and finalised at exit (if this code initialised it).
struct Session {
  bool ours = false;
  Session() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) return;
    int provided = 0;
    // FUNNELED: only the thread that made the communicator calls MPI; kernels' worker threads never do.
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) throw GafError("MPI_Init_thread failed: " + error_text(rc));
    ours = true;
  }
  ~Session() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (ours && !finalised) MPI_Finalize();
  }
};

void start_session() { static Session session; }

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  double timeout_seconds = 0;
  std::string timed_out;           // "AllReduce 'x'" once a collective timed out, else empty
  std::vector<uint64_t> gathered;  // check_same's receive buffer (MPI may still write it after a timeout)
  MPI_Comm node = MPI_COMM_NULL;   // the ranks sharing this machine's memory (shared_blocks)
  std::vector<MPI_Win> windows;    // shared_blocks' allocations, freed with the communicator

  std::string prefix() const { return "rank " + std::to_string(rank) + " of " + std::to_string(size) + ": "; }
  static std::string name(const char* op, const std::string& what) { return std::string(op) + " '" + what + "'"; }

  // After a timeout the ranks are out of step (the collective is still pending): refuse the rest.
  void guard(const char* op, const std::string& what) const {
    if (!timed_out.empty())
      throw GafError(prefix() + name(op, what) + " refused: the earlier " + timed_out +
                     " timed out, so the ranks are out of step");
  }

  void check(int rc, const char* call, const char* op, const std::string& what) const {
    if (rc != MPI_SUCCESS) throw GafError(prefix() + call + " for " + name(op, what) + " failed: " + error_text(rc));
  }

  int count(int64_t n, const char* unit, const char* op, const std::string& what) const {
    if (n < 0 || n > INT_MAX)
      throw GafError(prefix() + name(op, what) + " of " + std::to_string(n) + " " + unit +
                     " does not fit one MPI call (0.." + std::to_string(INT_MAX) + ")");
    return static_cast<int>(n);
  }

  // Polls `req` until done or the deadline. The first tests spin: a per-layer collective of a
  // few hundred KB between local ranks completes in tens of microseconds, and any sleep would
  // cost more than that. A longer wait yields, then sleeps, so a rank waiting for a slow or dead
  // peer does not hold a core.
  void wait(MPI_Request& req, Clock::time_point start, const char* op, const std::string& what) {
    constexpr int kSpinTests = 4000;
    int done = 0;
    for (int i = 0; i < kSpinTests; ++i) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", op, what);
      if (done) return;
    }
    const auto deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
    for (;;) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", op, what);
      if (done) return;
      const auto now = Clock::now();
      if (now >= deadline) {
        timed_out = name(op, what);
        throw GafError(prefix() + name(op, what) + " did not complete within " + seconds_text(timeout_seconds) +
                       " s: another rank died, stopped or never arrived");
      }
      const auto waited = now - start;
      if (waited < std::chrono::milliseconds(1))
        sched_yield();
      else if (waited < std::chrono::milliseconds(100))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

std::unique_ptr<Communicator> MpiCommunicator::create(double timeout_seconds) {
  if (!(timeout_seconds > 0)) throw GafError("MPI timeout must be > 0 seconds, got " + seconds_text(timeout_seconds));
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) throw GafError("MPI communicator requested after MPI was finalised");
  start_session();
  auto state = std::make_unique<State>();
  state->timeout_seconds = timeout_seconds;
  // A duplicate keeps our collectives apart from any other MPI use in the process.
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &state->comm);
  if (rc != MPI_SUCCESS) throw GafError("MPI_Comm_dup of MPI_COMM_WORLD failed: " + error_text(rc));
  // Errors come back as return codes (GafError) instead of MPI's default of aborting the job.
  MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(state->comm, &state->rank);
  MPI_Comm_size(state->comm, &state->size);
  const int rank = state->rank, size = state->size;
  return std::unique_ptr<Communicator>(new MpiCommunicator(std::move(state), rank, size, timeout_seconds));
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<State> state, int rank, int size, double timeout_seconds)
    : state_(std::move(state)), rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}

MpiCommunicator::~MpiCommunicator() {
  // A timed-out collective may still write into our buffers if the late rank arrives: keep them.
  if (!state_->timed_out.empty()) {
    (void)state_.release();
    return;
  }
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) return;
  for (MPI_Win& w : state_->windows) {
    MPI_Win_unlock_all(w);
    MPI_Win_free(&w);
  }
  if (state_->node != MPI_COMM_NULL) MPI_Comm_free(&state_->node);
  MPI_Comm_free(&state_->comm);
}

void MpiCommunicator::barrier(const std::string& what) {
  State& s = *state_;
  const char* op = "Barrier";
  s.guard(op, what);
  // Stores to shared blocks before the barrier are seen by every rank after it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto start = Clock::now();
  MPI_Request req;
  s.check(MPI_Ibarrier(s.comm, &req), "MPI_Ibarrier", op, what);
  s.wait(req, start, op, what);
  for (MPI_Win w : s.windows) MPI_Win_sync(w);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::vector<void*> MpiCommunicator::shared_blocks(int64_t bytes, const std::string& what) {
  State& s = *state_;
  const char* op = "SharedBlocks";
  s.guard(op, what);
  if (bytes <= 0) throw GafError(s.prefix() + State::name(op, what) + ": no bytes asked for");
  barrier(what);  // every rank is here (with the timeout) before the calls below, which block
  if (s.node == MPI_COMM_NULL)
    s.check(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &s.node), "MPI_Comm_split_type",
            op, what);
  int node_size = 0;
  MPI_Comm_size(s.node, &node_size);
  if (node_size != s.size) return {};  // ranks on several machines: every rank sees this alike
  // The kernels take the blocks as tensors, 64-byte aligned (their vector loads may assume it:
  // OpenMPI's segment starts 8 bytes past a line, and a norm's row sums loaded with vmovaps
  // faulted there). Each rank's region is padded so its block can start on the next line.
  constexpr int64_t kAlign = 64;
  const int64_t padded = (bytes + kAlign - 1) / kAlign * kAlign + kAlign;
  void* base = nullptr;
  MPI_Win win;
  s.check(MPI_Win_allocate_shared(static_cast<MPI_Aint>(padded), 1, MPI_INFO_NULL, s.node, &base, &win),
          "MPI_Win_allocate_shared", op, what);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);  // a passive epoch for MPI_Win_sync in barrier()
  s.windows.push_back(win);
  std::vector<void*> blocks(static_cast<size_t>(s.size), nullptr);
  for (int r = 0; r < s.size; ++r) {
    MPI_Aint size = 0;
    int disp = 0;
    // Node ranks are in world order: split_type was keyed by rank.
    void* region = nullptr;
    s.check(MPI_Win_shared_query(win, r, &size, &disp, &region), "MPI_Win_shared_query", op, what);
    const auto at = reinterpret_cast<uintptr_t>(region);
    blocks[static_cast<size_t>(r)] = reinterpret_cast<void*>((at + kAlign - 1) / kAlign * kAlign);
  }
  return blocks;
}

void MpiCommunicator::all_reduce_sum(float* data, int64_t count, const std::string& what) {
  State& s = *state_;
  const char* op = "AllReduce";
  s.guard(op, what);
  const int n = s.count(count, "floats", op, what);
  const auto start = Clock::now();
  MPI_Request req;
  s.check(MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, s.comm, &req), "MPI_Iallreduce", op, what);
  s.wait(req, start, op, what);
}

void MpiCommunicator::reduce_scatter_sum(const float* send, float* recv, int64_t block, const std::string& what) {
  State& s = *state_;
  const char* op = "ReduceScatter";
  s.guard(op, what);
  const int n = s.count(block, "floats", op, what);
  s.count(block * size_, "floats", op, what);  // the whole send buffer must fit too
  const auto start = Clock::now();
  MPI_Request req;
  s.check(MPI_Ireduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, s.comm, &req), "MPI_Ireduce_scatter_block", op,
          what);
  s.wait(req, start, op, what);
}

void MpiCommunicator::all_gather(void* data, int64_t block_bytes, const std::string& what) {
  State& s = *state_;
  const char* op = "AllGather";
  s.guard(op, what);
  const int n = s.count(block_bytes, "bytes", op, what);
  s.count(block_bytes * size_, "bytes", op, what);  // the whole buffer must fit too
  const auto start = Clock::now();
  MPI_Request req;
  s.check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, n, MPI_BYTE, s.comm, &req), "MPI_Iallgather", op,
          what);
  s.wait(req, start, op, what);
}

void MpiCommunicator::check_same(uint64_t value, const std::string& what) {
  State& s = *state_;
  const char* op = "check_same";
  s.guard(op, what);
  s.gathered.assign(size_, 0);
  s.gathered[rank_] = value;
  const auto start = Clock::now();
  MPI_Request req;
  s.check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s.gathered.data(), 1, MPI_UINT64_T, s.comm, &req),
          "MPI_Iallgather", op, what);
  s.wait(req, start, op, what);

  // The same text on every rank: rank 0's value, then each rank that differs from it.
  constexpr int kListed = 8;
  std::string differing;
  int n_differing = 0;
  for (int r = 1; r < size_; ++r) {
    if (s.gathered[r] == s.gathered[0]) continue;
    if (++n_differing <= kListed) differing += ", rank " + std::to_string(r) + " has " + hex(s.gathered[r]);
  }
  if (n_differing == 0) return;
  if (n_differing > kListed) differing += " and " + std::to_string(n_differing - kListed) + " more ranks differ";
  throw GafError(what + " differs between ranks: rank 0 has " + hex(s.gathered[0]) + differing +
                 " (ranks loaded different models or options)");
}

void MpiCommunicator::abort(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace gaf
