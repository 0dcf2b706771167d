// This process's peak resident memory, for the "peak RSS" lines of gaf run and the AOT apps.
#pragma once

#include <cstdint>

namespace gaf {

// Bytes: Linux's VmHWM, the high-water mark of this program's own address space. getrusage's
// ru_maxrss also keeps the peak from before exec, so a program started by fork + exec from a
// large process (gaf_bench holding the peers' weights) would report the parent's size; it is the
// fallback where /proc is missing.
int64_t peak_rss_bytes();

}  // namespace gaf
