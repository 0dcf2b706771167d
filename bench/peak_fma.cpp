#include "bench/peak_fma.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gaf::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Iterations of the inner loop between clock reads; each iteration is kChains FMAs.
constexpr int64_t kBlock = 1 << 16;
constexpr int kChains = 16;  // > latency x pipes (4 x 2) so the chains never wait on each other

// Runs FMA blocks until `stop`; returns FMA instructions issued. The sum of the accumulators goes
// to `sink` so the compiler cannot drop the work.
__attribute__((target("avx512f"))) int64_t run_avx512(const std::atomic<bool>& stop, float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  int64_t blocks = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    for (int64_t i = 0; i < kBlock; ++i) {
#pragma GCC unroll 16
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    ++blocks;
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  *sink = _mm512_reduce_add_ps(s);
  return blocks * kBlock * kChains;
}

__attribute__((target("avx2,fma"))) int64_t run_avx2(const std::atomic<bool>& stop, float* sink) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  int64_t blocks = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    for (int64_t i = 0; i < kBlock; ++i) {
#pragma GCC unroll 16
      for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    ++blocks;
  }
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  *sink = lanes[0] + lanes[7];
  return blocks * kBlock * kChains;
}

// One repeat: all threads start together, run `seconds`, stop together. GFLOP/s of all threads.
double one_repeat(int threads, bool avx512, double seconds) {
  std::atomic<bool> go{false}, stop{false};
  std::vector<int64_t> fmas(threads, 0);
  std::vector<float> sinks(threads, 0.0f);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      fmas[t] = avx512 ? run_avx512(stop, &sinks[t]) : run_avx2(stop, &sinks[t]);
    });
  auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& th : pool) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  int64_t total = 0;
  for (int64_t f : fmas) total += f;
  const double lanes = avx512 ? 16 : 8;
  return 2.0 * lanes * static_cast<double>(total) / elapsed / 1e9;  // FMA = 2 flops per lane
}

}  // namespace

PeakFma measure_peak_fma(int repeats, double seconds) {
  __builtin_cpu_init();
  PeakFma r;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    throw std::runtime_error("peak FMA: the CPU has neither AVX-512F nor AVX2+FMA");
  r.isa = avx512 ? "avx512f" : "avx2+fma";
  r.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < std::max(1, repeats); ++i) r.gflops = std::max(r.gflops, one_repeat(r.threads, avx512, seconds));
  return r;
}

}  // namespace gaf::bench
