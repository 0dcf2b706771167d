#include "engine/rule_plugin.h"

#include <dlfcn.h>

#include <filesystem>

#include "generators/custom_rules.h"
#include "runtime/tensor.h"

namespace gaf {

namespace {

// Plugins call register_fusion_rule, which nothing in gaf itself calls: referencing it here makes
// every executable that can load plugins link it (and, with ENABLE_EXPORTS, export it).
[[maybe_unused]] __attribute__((used)) void (*const kPluginApi)(RuleRegistry&, const std::string&, Pattern,
                                                                GenerateFn) = &register_fusion_rule;

std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

}  // namespace

void load_rule_plugin(const std::string& path, RuleRegistry& rules) {
  const std::string where = "rule plugin '" + path + "': ";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw GafError(where + "no such file");
  // An absolute path: dlopen would otherwise search the library path for a bare name.
  std::string abs = std::filesystem::absolute(path, ec).string();
  void* lib = dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw GafError(where + "not a loadable shared library (" + last_dl_error() + ")");

  using VersionFn = int (*)();
  using RegisterFn = void (*)(RuleRegistry&);
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "gaf_plugin_abi_version"));
  auto reg = reinterpret_cast<RegisterFn>(dlsym(lib, "gaf_register_rules"));
  if (!version || !reg) {
    dlclose(lib);
    throw GafError(where + "exports no extern \"C\" " + (version ? "gaf_register_rules" : "gaf_plugin_abi_version") +
                   " function");
  }
  if (int v = version(); v != GAF_RULE_PLUGIN_ABI_VERSION) {
    dlclose(lib);
    throw GafError(where + "plugin ABI version " + std::to_string(v) + ", this gaf loads version " +
                   std::to_string(GAF_RULE_PLUGIN_ABI_VERSION) + ": rebuild it against this gaf");
  }
  try {
    reg(rules);
  } catch (const GafError& e) {
    throw GafError(where + e.what());  // e.g. a rule name the registry already has
  } catch (const std::exception& e) {
    throw GafError(where + "gaf_register_rules failed: " + e.what());
  }
}

}  // namespace gaf
