#!/usr/bin/env bash
# README command 1: install dependencies, build, show the fusion plan of the built-in default
# model (BERT-base, 12 layers, seq 128) and run it fused and unfused.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
./build/gaf plan builtin:bert-base --seq 128 "$@"
./build/gaf run builtin:bert-base --seq 128 --repeat 5 --compare "$@"
