#!/usr/bin/env bash
# README command 2: install dependencies, build, run the whole test suite (ctest, all labels).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
cd build
# Conformance first, on its own, so that its summary lines are shown even when it passes.
if ! ctest -L conformance --output-on-failure -V > conformance.log 2>&1; then
  grep -E "\[conformance\]|Failure|Expected|Which is|actual" conformance.log | sed 's/^[0-9]*: //' | tail -60
  echo "conformance tests FAILED (full log: build/conformance.log)"
  exit 1
fi
grep -E "\[conformance\]" conformance.log | sed 's/^[0-9]*: //'
ctest -LE conformance --output-on-failure -j2
