// FNV-1a, 64 bits: a stable hash of bytes, the same in every process and build (what ranks of a
// tensor-parallel job compare: their plans, their inputs; the AOT plan's kernel table hash; the
// NPU target's key in a schedule database). A fingerprint, not a security measure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gaf {

class Fnv1a {
 public:
  void add(const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  }
  // A string and an end mark, so that ("ab", "c") and ("a", "bc") differ.
  void add(const std::string& s) {
    add(s.data(), s.size());
    const unsigned char end = 0xff;
    add(&end, 1);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

// The hash of `text`'s bytes (no end mark) as 16 hex digits.
inline std::string fnv1a_hex(const std::string& text) {
  Fnv1a h;
  h.add(text.data(), text.size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h.value()));
  return buf;
}

}  // namespace gaf
