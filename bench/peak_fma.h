// Peak fp32 FMA throughput of this machine, measured: one thread per core, each running many
// independent FMA chains (AVX-512 if the CPU has it, else AVX2+FMA) for a fixed time.
#pragma once

#include <string>

namespace gaf::bench {

struct PeakFma {
  double gflops = 0;  // best of the repeats, all threads together
  int threads = 0;
  std::string isa;  // "avx512f" or "avx2+fma"
};

// Each repeat runs every thread for about `seconds`; the best repeat is reported.
PeakFma measure_peak_fma(int repeats = 3, double seconds = 0.3);

}  // namespace gaf::bench
