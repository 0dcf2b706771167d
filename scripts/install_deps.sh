#!/usr/bin/env bash
# Installs the Debian packages graph-autofusion needs (skips what is already installed).
# Usage: scripts/install_deps.sh [--with-peers] [--with-fuzz]
#   PyTorch (python3-torch) is always installed: the end-to-end tests export models with it.
#   --with-peers adds the benchmark peers: oneDNN (libdnnl-dev) for bench/gaf_bench, and OpenBLAS
#   (libopenblas0-pthread) as the system BLAS Debian's torch calls — with the reference BLAS it
#   falls back to, PyTorch eager BERT-base takes 6.1 s instead of 0.15 s at seq 128.
#   --with-fuzz adds clang-14 and libFuzzer for the loaders' fuzzing harnesses (-DGAF_FUZZ=ON, fuzz/).
set -euo pipefail

# graphviz draws the report's picture (dot -Tsvg); libspdlog-dev/libfmt-dev give the CLI's log
# levels; chromium opens the HTML report in a test (skipped where it is absent); OpenMPI
# (libopenmpi-dev, and mpirun from openmpi-bin) runs tensor-parallel ranks and their tests.
packages=(cmake g++ make libhalide14-0-dev libgtest-dev libcli11-dev libonnx-dev libprotobuf-dev
          protobuf-compiler nlohmann-json3-dev libonnx-testdata graphviz libspdlog-dev libfmt-dev
          chromium python3-torch python3-onnx python3-numpy libopenmpi-dev openmpi-bin)
for arg in "$@"; do
  case "$arg" in
    --with-peers) packages+=(libdnnl-dev libopenblas0-pthread) ;;
    --with-fuzz) packages+=(clang-14 libfuzzer-14-dev) ;;
    *) echo "install_deps: unknown option '$arg' (usage: scripts/install_deps.sh [--with-peers] [--with-fuzz])" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
