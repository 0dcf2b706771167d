#!/usr/bin/env bash
# Rule plugins end to end: `cmake --install` into a scratch prefix, examples/rule_plugin built
# against it, its rule seen by the installed gaf's planner (and disabled by name), the plugin
# carrying no copy of gaf's registries, and the one-line errors of --rules.
#   rule_plugin_test.sh <gaf build dir> <source dir> <scratch dir>
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
prefix=$scratch/prefix
fail() { echo "rule_plugin_test: FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
cmake -S "$src/examples/rule_plugin" -B "$scratch/plugin" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$scratch/configure.log" || { cat "$scratch/configure.log"; fail "configure"; }
cmake --build "$scratch/plugin" > "$scratch/build.log" || { cat "$scratch/build.log"; fail "build"; }
plugin=$scratch/plugin/libgaf_gelu_rules.so
gaf=$prefix/bin/gaf
model=(builtin:bert-base --layers 1 --seq 16)

# No second copy of the registries: the plugin defines no gaf function of its own (only inline ones).
if nm -C -D --defined-only "$plugin" | grep -E ' T gaf::' ; then fail "the plugin defines gaf functions"; fi

out=$("$gaf" plan "${model[@]}" --rules "$plugin")
grep -q "gelu_erf_fused" <<< "$out" || { echo "$out"; fail "the plugin's rule is not in the plan"; }
out=$("$gaf" plan "${model[@]}" --rules "$plugin" --disable-rule gelu_erf_fused)
if grep -q "gelu_erf_fused" <<< "$out"; then echo "$out"; fail "--disable-rule gelu_erf_fused left the rule on"; fi
out=$("$gaf" explain "${model[@]}" --rules "$plugin" --node gelu/Erf)
grep -q "rule gelu_erf_fused" <<< "$out" || { echo "$out"; fail "explain does not name the plugin's rule"; }
# The generate step, registered by the plugin, is the one the CLI's kernels are compiled from.
out=$("$gaf" verify "${model[@]}" --rules "$plugin")
grep -Eq "custom +gelu_erf_fused .* ok" <<< "$out" || { echo "$out"; fail "verify of the plugin's group"; }

# Plugins that must be refused, each with one line naming the file.
printf 'extern "C" int gaf_plugin_abi_version() { return 1; }\n' > "$scratch/noreg.cpp"
printf 'extern "C" int gaf_plugin_abi_version() { return 999; }\nextern "C" void gaf_register_rules(void*) {}\n' > "$scratch/abi.cpp"
cat > "$scratch/clash.cpp" <<'CPP'
#include "engine/rule_plugin.h"
#include "fusion/planner/custom_rule.h"
#include <memory>
extern "C" int gaf_plugin_abi_version() { return GAF_RULE_PLUGIN_ABI_VERSION; }
extern "C" void gaf_register_rules(gaf::RuleRegistry& r) { r.add(std::make_shared<gaf::CustomRule>("attention", gaf::Pattern("Erf"))); }
CPP
for p in noreg abi clash; do
  c++ -std=c++17 -shared -fPIC -I"$prefix/include" -o "$scratch/$p.so" "$scratch/$p.cpp"
done
expect_error() {  # expect_error <plugin> <text>
  if "$gaf" plan "${model[@]}" --rules "$1" > "$scratch/out.txt" 2> "$scratch/err.txt"; then fail "--rules $1 was accepted"; fi
  [ "$(wc -l < "$scratch/err.txt")" -eq 1 ] || { cat "$scratch/err.txt"; fail "--rules $1: not one line"; }
  grep -q "gaf: error: rule plugin '$1': .*$2" "$scratch/err.txt" || { cat "$scratch/err.txt"; fail "--rules $1: expected '$2'"; }
  [ ! -s "$scratch/out.txt" ] || fail "--rules $1 printed a partial plan"
}
expect_error "$scratch/missing.so" "no such file"
expect_error "$src/examples/rule_plugin/CMakeLists.txt" "not a loadable shared library"
expect_error "$scratch/noreg.so" "exports no extern \"C\" gaf_register_rules"
expect_error "$scratch/abi.so" "plugin ABI version 999"
expect_error "$scratch/clash.so" "fusion rule 'attention' is registered twice"
echo "rule_plugin_test: PASS"
