#include "runtime/process_memory.h"

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace gaf {

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;  // "VmHWM:  437132 kB"
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // KB on Linux
}

}  // namespace gaf
