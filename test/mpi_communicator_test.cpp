// MpiCommunicator between the ranks of `mpirun -np P` (ctest runs P = 2): the collectives'
// results, check_same's error text, and a timeout that ends in a GafError instead of a hang.
// Plain main() rather than gtest: every rank must run every collective in the same order, so a
// check failing on one rank cannot skip the rest. Rank 0 prints "mpi_communicator_test: PASS"
// only when no rank failed.
//   mpi_communicator_test           the checks, both ranks exit normally
//   mpi_communicator_test --abort   rank 1 never arrives; rank 0 times out and aborts the job
//   mpi_communicator_test --bench   median latencies of the collectives a layer needs
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/mpi_communicator.h"
#include "runtime/tensor.h"

using gaf::Communicator;
using gaf::GafError;
using gaf::MpiCommunicator;

namespace {

int g_failures = 0;
int g_rank = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, what.c_str());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void test_all_reduce(Communicator& c) {
  const int64_t n = 1001;
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = float((c.rank() + 1) * (i % 7));
  c.all_reduce_sum(data.data(), n, "all_reduce test");
  const int ranks_sum = c.size() * (c.size() + 1) / 2;
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) ok = ok && data[i] == float(ranks_sum * (i % 7));
  check(ok, "all_reduce_sum of 1001 floats");
}

void test_reduce_scatter(Communicator& c) {
  const int64_t block = 333;
  std::vector<float> send(block * c.size()), recv(block, -1.f);
  for (int b = 0; b < c.size(); ++b)
    for (int64_t i = 0; i < block; ++i) send[b * block + i] = float(c.rank() * 1000 + b * 10 + i % 5);
  c.reduce_scatter_sum(send.data(), recv.data(), block, "reduce_scatter test");
  bool ok = true;
  for (int64_t i = 0; i < block; ++i) {
    float want = 0;
    for (int r = 0; r < c.size(); ++r) want += float(r * 1000 + c.rank() * 10 + i % 5);
    ok = ok && recv[i] == want;
  }
  check(ok, "reduce_scatter_sum of " + std::to_string(block) + "-float blocks");
}

void test_all_gather(Communicator& c) {
  for (int64_t block_bytes : {1, 13, 4099}) {
    std::vector<uint8_t> data(block_bytes * c.size(), 0xEE);
    auto byte = [](int r, int64_t i) { return uint8_t((r * 31 + i * 7) & 0xff); };
    for (int64_t i = 0; i < block_bytes; ++i) data[c.rank() * block_bytes + i] = byte(c.rank(), i);
    c.all_gather(data.data(), block_bytes, "all_gather test");
    bool ok = true;
    for (int r = 0; r < c.size(); ++r)
      for (int64_t i = 0; i < block_bytes; ++i) ok = ok && data[r * block_bytes + i] == byte(r, i);
    check(ok, "all_gather of " + std::to_string(block_bytes) + "-byte blocks");
  }
}

// Ranks on one machine: each writes its block, and after a barrier reads every other's.
void test_shared_blocks(Communicator& c) {
  std::vector<void*> blocks = c.shared_blocks(4096, "shared test");
  check(static_cast<int>(blocks.size()) == c.size(), "shared_blocks on one machine gives every rank's block");
  if (static_cast<int>(blocks.size()) != c.size()) return;
  // 64-byte aligned, as the kernels' tensors are, whatever the size asked (vector loads faulted on
  // OpenMPI's segment 8 bytes past a line).
  std::vector<void*> odd = c.shared_blocks(4100, "shared test, odd size");
  bool aligned = odd.size() == blocks.size();
  for (const std::vector<void*>* bs : {&blocks, &odd})
    for (void* b : *bs) aligned = aligned && reinterpret_cast<uintptr_t>(b) % 64 == 0;
  check(aligned, "shared blocks start on 64-byte boundaries");
  for (int round = 0; round < 3; ++round) {
    auto* mine = static_cast<int32_t*>(blocks[static_cast<size_t>(c.rank())]);
    for (int i = 0; i < 1024; ++i) mine[i] = c.rank() * 100000 + round * 1000 + i;
    c.barrier("shared test written");
    bool ok = true;
    for (int r = 0; r < c.size(); ++r)
      for (int i = 0; i < 1024; ++i)
        ok = ok && static_cast<int32_t*>(blocks[static_cast<size_t>(r)])[i] == r * 100000 + round * 1000 + i;
    check(ok, "shared blocks read after a barrier, round " + std::to_string(round));
    c.barrier("shared test read");
  }
}

void test_check_same(Communicator& c) {
  try {
    c.check_same(0x1234, "plan hash");
  } catch (const GafError& e) {
    check(false, std::string("check_same of equal values threw: ") + e.what());
  }
  std::string error;
  try {
    c.check_same(c.rank() == 0 ? 0x1234 : 0xabcd, "plan hash");
  } catch (const GafError& e) {
    error = e.what();
  }
  std::string want = "plan hash differs between ranks: rank 0 has 0x0000000000001234, rank 1 has 0x000000000000abcd";
  check(
      contains(error, want) && contains(error, "(ranks loaded different models or options)") && !contains(error, "\n"),
      "check_same of different values: got '" + error + "'");
}

void test_too_large(Communicator& c) {
  std::string error;
  try {
    float x = 0;
    c.all_reduce_sum(&x, int64_t(1) << 31, "huge");  // refused before any MPI call
  } catch (const GafError& e) {
    error = e.what();
  }
  check(contains(error, "AllReduce 'huge' of 2147483648 floats does not fit one MPI call"),
        "count above INT_MAX: got '" + error + "'");
}

// Rank 1 skips a collective on a 2 s communicator; rank 0 must get the GafError in about 2 s.
// Afterwards rank 1 arrives late, so the pending collective completes and both ranks can exit.
void test_timeout(Communicator& c) {
  auto quick = MpiCommunicator::create(2.0);
  std::vector<float> buf(16, 1.f);
  if (c.rank() == 0) {
    std::string error;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      quick->all_reduce_sum(buf.data(), 16, "layer3/attn_out");
    } catch (const GafError& e) {
      error = e.what();
    }
    const double took = seconds_since(t0);
    std::printf("timeout case: rank 0 got after %.2f s: %s\n", took, error.c_str());
    check(error == "rank 0 of " + std::to_string(c.size()) +
                       ": AllReduce 'layer3/attn_out' did not complete within 2 s: another rank died, stopped or "
                       "never arrived",
          "timeout error text: got '" + error + "'");
    check(took >= 1.9 && took < 5.0, "timeout after " + std::to_string(took) + " s, want about 2 s");
    std::string refused;
    try {
      quick->check_same(1, "after timeout");
    } catch (const GafError& e) {
      refused = e.what();
    }
    check(contains(refused, "check_same 'after timeout' refused: the earlier AllReduce 'layer3/attn_out' timed out"),
          "collective after a timeout: got '" + refused + "'");
  }
  float done = 1;
  c.all_reduce_sum(&done, 1, "timeout case done");  // rank 1 waits here while rank 0 times out
  if (c.rank() != 0) quick->all_reduce_sum(buf.data(), 16, "late arrival");
  c.all_reduce_sum(&done, 1, "late arrival done");  // rank 0 progresses its pending collective here
}

// The CLI's way out after an error: rank 1 waits in a collective rank 0 never joins; rank 0 times
// out, says so and aborts the job, which must end rank 1 too (ctest's TIMEOUT catches a hang).
int run_abort_case() {
  // Two communicators, so the ranks' collectives cannot match each other.
  auto quick = MpiCommunicator::create(2.0);
  auto slow = MpiCommunicator::create(600.0);
  float x = 1;
  try {
    if (quick->rank() == 0)
      quick->all_reduce_sum(&x, 1, "never joined by rank 1");
    else
      slow->all_reduce_sum(&x, 1, "never joined by rank 0");
  } catch (const GafError& e) {
    std::printf("abort case: rank %d: %s\n", quick->rank(), e.what());
    MpiCommunicator::abort(3);
  }
  std::printf("abort case: rank %d: FAILED: the collective completed\n", quick->rank());
  return 1;
}

double median_us(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e6;
}

// Median over `iters` of one AllReduce and of ReduceScatter + AllGather, for `floats` floats.
void bench(Communicator& c, int64_t floats, int iters) {
  const int64_t block = floats / c.size();
  std::vector<float> data(block * c.size(), 1.f), part(block);
  std::vector<double> ar, rsag;
  for (int i = 0; i < iters + 10; ++i) {
    auto t = std::chrono::steady_clock::now();
    c.all_reduce_sum(data.data(), block * c.size(), "bench all_reduce");
    if (i >= 10) ar.push_back(seconds_since(t));
  }
  for (int i = 0; i < iters + 10; ++i) {
    std::fill(data.begin(), data.end(), 1.f);
    auto t = std::chrono::steady_clock::now();
    c.reduce_scatter_sum(data.data(), part.data(), block, "bench reduce_scatter");
    std::memcpy(data.data() + c.rank() * block, part.data(), block * sizeof(float));
    c.all_gather(data.data(), block * int64_t(sizeof(float)), "bench all_gather");
    if (i >= 10) rsag.push_back(seconds_since(t));
  }
  if (c.rank() == 0)
    std::printf(
        "%d ranks, %lld floats (%lld bytes): all_reduce_sum %.1f us, reduce_scatter+all_gather %.1f us "
        "(median of %d)\n",
        c.size(), (long long)(block * c.size()), (long long)(block * c.size() * 4), median_us(ar), median_us(rsag),
        iters);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (!gaf::mpi_launched()) {
      std::printf("mpi_communicator_test: run under mpirun -np 2\n");
      return 1;
    }
    if (mode == "--abort") return run_abort_case();
    auto c = MpiCommunicator::create(30.0);
    g_rank = c->rank();
    if (mode == "--bench") {
      for (int64_t floats : {int64_t(2048), int64_t(128 * 768)}) bench(*c, floats, 200);
      return 0;
    }
    if (c->size() < 2) {
      std::printf("mpi_communicator_test: needs at least 2 ranks, got %d\n", c->size());
      return 1;
    }
    test_all_reduce(*c);
    test_reduce_scatter(*c);
    test_all_gather(*c);
    test_check_same(*c);
    test_shared_blocks(*c);
    test_too_large(*c);
    test_timeout(*c);
    float failures = float(g_failures);
    c->all_reduce_sum(&failures, 1, "failure count");
    if (c->rank() == 0) std::printf("mpi_communicator_test: %s\n", failures == 0 ? "PASS" : "FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const GafError& e) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, e.what());
    MpiCommunicator::abort(1);
  }
}
