#include "runtime/cpu_facts.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace gaf {

namespace {

struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
#if defined(__x86_64__) || defined(__i386__)
  r.eax = leaf;
  r.ecx = subleaf;
  __asm__("cpuid" : "+a"(r.eax), "=b"(r.ebx), "+c"(r.ecx), "=d"(r.edx));
#else
  (void)leaf;
  (void)subleaf;
#endif
  return r;
}

bool bit(unsigned v, int b) { return (v >> b) & 1u; }

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// "32K", "512K", "32768K", "2M" (sysfs cache sizes) as bytes; 0 when unreadable.
int64_t size_bytes(const std::string& text) {
  if (text.empty()) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (n <= 0) return 0;
  const char unit = end ? *end : '\0';
  return n * (unit == 'K' ? 1024LL : unit == 'M' ? 1024LL * 1024 : unit == 'G' ? 1024LL * 1024 * 1024 : 1);
}

// Linux keeps AMX's 8 KB of tile state off until a process asks (arch_prctl ARCH_REQ_XCOMP_PERM);
// ARCH_GET_XCOMP_PERM tells whether XTILEDATA (state component 18) is permitted already.
bool amx_permitted() {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
  constexpr int kArchGetXcompPerm = 0x1022;
  uint64_t bits = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &bits) != 0) return false;
  return (bits >> 18) & 1u;
#else
  return false;
#endif
}

// The data and unified caches CPUID describes, for VMs whose sysfs has no cache folders: the
// deterministic cache parameters (leaf 4 on Intel, 0x8000001D on AMD, the same layout; bytes =
// ways x partitions x line size x sets), else AMD's older size leaves (0x80000005: L1d KB in
// ECX[31:24]; 0x80000006: L2 KB in ECX[31:16], L3 in 512 KB units in EDX[31:18]), which VMs that
// hide the first still answer (this project's Zen 5 VM).
void caches_from_cpuid(CpuFacts& f, unsigned max_leaf) {
  const bool amd = f.vendor == "AuthenticAMD";
  const unsigned leaf = amd ? 0x8000001Du : 4u;
  const unsigned max_ext = cpuid(0x80000000u).eax;
  if (amd && max_ext >= 0x80000006u) {
    if (f.l1d == 0) f.l1d = int64_t{cpuid(0x80000005u).ecx >> 24} * 1024;
    const Regs l23 = cpuid(0x80000006u);
    if (f.l2 == 0) f.l2 = int64_t{l23.ecx >> 16} * 1024;
    if (f.l3 == 0) f.l3 = int64_t{l23.edx >> 18} * 512 * 1024;
  }
  if (amd ? max_ext < leaf || !bit(cpuid(0x80000001u).ecx, 22) : max_leaf < leaf) return;
  for (unsigned i = 0; i < 16; ++i) {
    const Regs r = cpuid(leaf, i);
    const unsigned type = r.eax & 0x1f, level = (r.eax >> 5) & 0x7;
    if (type == 0) break;
    if (type == 2) continue;  // instruction cache
    const int64_t bytes = int64_t{((r.ebx >> 22) & 0x3ff) + 1} * (((r.ebx >> 12) & 0x3ff) + 1) * ((r.ebx & 0xfff) + 1) *
                          (int64_t{r.ecx} + 1);
    if (level == 1 && f.l1d == 0) f.l1d = bytes;
    if (level == 2 && f.l2 == 0) f.l2 = bytes;
    if (level == 3 && f.l3 == 0) f.l3 = bytes;
  }
}

CpuFacts detect() {
  CpuFacts f;
  const Regs v = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &v.ebx, 4);
  std::memcpy(vendor + 4, &v.edx, 4);
  std::memcpy(vendor + 8, &v.ecx, 4);
  f.vendor = vendor;
  const unsigned max_leaf = v.eax;
  if (max_leaf >= 1) {
    const Regs l1 = cpuid(1);
    const unsigned base_family = (l1.eax >> 8) & 0xf, base_model = (l1.eax >> 4) & 0xf;
    f.family = static_cast<int>(base_family == 0xf ? base_family + ((l1.eax >> 20) & 0xff) : base_family);
    f.model = static_cast<int>(base_family >= 0x6 ? base_model + (((l1.eax >> 16) & 0xf) << 4) : base_model);
    f.fma = bit(l1.ecx, 12);
  }
  if (max_leaf >= 7) {
    const Regs l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
    f.avx2 = bit(l7.ebx, 5);
    f.avx512f = bit(l7.ebx, 16);
    f.avx512_vnni = bit(l7.ecx, 11);
    f.avx512_fp16 = bit(l7.edx, 23);
    f.amx_bf16 = bit(l7.edx, 22);
    f.amx_tile = bit(l7.edx, 24);
    f.amx_int8 = bit(l7.edx, 25);
    f.avx_vnni = bit(l7s1.eax, 4);
    f.avx512_bf16 = bit(l7s1.eax, 5);
  }
  f.amx_usable = f.amx_tile && amx_permitted();
  cpu_set_t set;
  f.logical_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      const size_t start = colon == std::string::npos ? colon : line.find_first_not_of(' ', colon + 1);
      if (start != std::string::npos) f.name = line.substr(start);
      break;
    }
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    if (level.empty()) break;
    const int64_t bytes = size_bytes(read_line(dir + "size"));
    if (level == "1" && type == "Data") f.l1d = bytes;
    if (level == "2") f.l2 = bytes;
    if (level == "3") f.l3 = bytes;
  }
  caches_from_cpuid(f, max_leaf);  // what sysfs did not say
  return f;
}

std::string kb(int64_t bytes) {
  if (bytes == 0) return "unknown";
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) return std::to_string(bytes / (1024 * 1024)) + " MB";
  return std::to_string(bytes / 1024) + " KB";
}

}  // namespace

std::string CpuFacts::feature_list() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_fp16, "avx512_fp16");
  add(avx512_vnni, "avx512_vnni");
  add(avx_vnni, "avx_vnni");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  return s.empty() ? "none of the vector features the kernels use" : s;
}

std::string CpuFacts::report() const {
  std::ostringstream o;
  o << "  name: " << (name.empty() ? "unknown" : name) << " (" << vendor << ", family " << family << " model " << model
    << ")\n";
  o << "  cpus: " << logical_cpus << " this process may run on\n";
  o << "  caches: L1d " << kb(l1d) << ", L2 " << kb(l2) << ", L3 " << kb(l3) << "\n";
  o << "  features: " << feature_list() << "\n";
  o << "  fp32 FMA lanes: "
    << (avx512f ? 16
        : avx2  ? 8
                : 4)
    << "; bf16 dot products: " << (avx512_bf16 ? "yes" : "no")
    << "; int8 dot products: " << (avx512_vnni || avx_vnni ? "yes" : "no") << "; AMX: "
    << (!amx_tile    ? "no"
        : amx_usable ? "yes"
                     : "present, not yet permitted for this process")
    << "\n";
  return o.str();
}

const CpuFacts& cpu_facts() {
  static const CpuFacts facts = detect();
  return facts;
}

}  // namespace gaf
