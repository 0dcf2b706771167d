#!/usr/bin/env bash
# README command 1: install dependencies, build, show the fusion plan of the built-in default
# model (BERT-base, 12 layers, seq 128), write its HTML report (bert.html) and run it fused and
# unfused.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
./build/gaf plan builtin:bert-base --seq 128 "$@"
./build/gaf report builtin:bert-base --seq 128 --html bert.html "$@"   # open bert.html in a browser
./build/gaf run builtin:bert-base --seq 128 --repeat 5 --compare "$@"
