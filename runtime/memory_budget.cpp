#include "runtime/memory_budget.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/tensor.h"

namespace gaf {

namespace {

std::atomic<int64_t> g_budget{0};  // 0 = physical memory
std::atomic<int64_t> g_live{0};

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page;
}

void set_memory_budget(int64_t bytes) { g_budget = bytes < 0 ? 0 : bytes; }

int64_t memory_budget() {
  int64_t b = g_budget;
  if (b > 0) return b;
  int64_t ram = physical_memory_bytes();
  return ram > 0 ? ram : INT64_MAX;
}

int64_t tensor_bytes_live() { return g_live; }

void check_memory_budget(int64_t bytes, const std::string& what) {
  const int64_t budget = memory_budget(), live = g_live;
  if (bytes > budget - live)
    throw GafError(what + " needs " + megabytes(bytes) + ", more than the memory budget of " + megabytes(budget) +
                   (live ? " (" + megabytes(live) + " already in use)" : "") + "; --max-memory raises it");
}

std::shared_ptr<uint8_t> allocate_tensor_storage(int64_t bytes, const std::string& what) {
  // Padded to whole 64-byte lines: aligned_alloc needs a multiple of the alignment, and kernels
  // may load a full vector at the end of a row.
  const int64_t padded = bytes <= 0 ? 64 : checked_add(bytes, 63, "tensor bytes") / 64 * 64;
  const int64_t before = g_live.fetch_add(padded);
  if (padded > memory_budget() - before) {
    g_live.fetch_sub(padded);
    check_memory_budget(padded, what);  // throws with the numbers
  }
  void* p = std::aligned_alloc(64, static_cast<size_t>(padded));
  if (!p) {
    g_live.fetch_sub(padded);
    throw GafError(what + ": out of memory allocating " + megabytes(padded));
  }
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [padded](uint8_t* q) {
    std::free(q);
    g_live.fetch_sub(padded);
  });
}

int64_t parse_byte_count(const std::string& text, const std::string& flag) {
  const std::string hint = flag + " '" + text + "': expected a size such as 512M, 8G or a number of bytes";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !(v > 0)) throw GafError(hint);
  std::string unit(end);
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    throw GafError(hint);
  const double bytes = v * scale;
  if (!(bytes >= 1) || bytes >= 9.2e18) throw GafError(flag + " '" + text + "' is out of range");
  return static_cast<int64_t>(bytes);
}

}  // namespace gaf
