#!/usr/bin/env bash
# README command 1: install dependencies, build, run the built-in default model (BERT-base).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
./build/gaf run builtin:bert-base --seq 128 --repeat 3 "$@"
