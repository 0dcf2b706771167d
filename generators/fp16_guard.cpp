#include "generators/fp16_guard.h"

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "runtime/tensor.h"
#include "schedules/host_target.h"

namespace gaf {

bool assembly_has_fp16(const std::string& assembly) {
  // An instruction is the first word of a line after whitespace; FP16 forms end in ph/sh
  // (vaddph, vfmadd231sh, vcvtph2psx, ...) or are the word moves vmovw/vmovsh.
  static const std::regex fp16(R"(^\s+(vmovw|vmovsh|v[a-z0-9]*(ph|sh)x?)\s)");
  static const std::regex f16c(R"(^\s+(vcvtps2ph|vcvtph2ps)\s)");
  std::istringstream in(assembly);
  for (std::string line; std::getline(in, line);) {
    line += ' ';
    if (std::regex_search(line, fp16) && !std::regex_search(line, f16c)) return true;
  }
  return false;
}

Halide::Target fp16_safe_target(Halide::Pipeline& p, const std::vector<Halide::Argument>& args,
                                const Halide::Target& wanted) {
  if (!wanted.has_feature(Halide::Target::AVX512_SapphireRapids) || cpu_has_avx512_fp16()) return wanted;
  char path[] = "/tmp/gaf_fp16_guard_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw GafError("fp16 guard: cannot create a temporary file in /tmp");
  close(fd);
  const std::string file = std::string(path) + ".s";
  std::string text;
  try {
    p.compile_to_assembly(file, args, "gaf_fp16_guard", wanted);
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (...) {
    std::remove(file.c_str());
    std::remove(path);
    throw;
  }
  std::remove(file.c_str());
  std::remove(path);
  if (!assembly_has_fp16(text)) return wanted;
  spdlog::debug("fp16 guard: kernel uses AVX512-FP16 instructions this CPU lacks; compiled without Sapphire Rapids");
  return wanted.without_feature(Halide::Target::AVX512_SapphireRapids);
}

}  // namespace gaf
