#!/usr/bin/env bash
# Install everything PITCHFORK needs on a Debian machine: cross toolchains + qemu (apt), Python packages (pip).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq build-essential qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross clang lld llvm llvm-22 >/dev/null  # llvm-22: llvm-mca, llvm-mc, llc for `pitchfork bench`; build-essential: gcc/g++/make (AOT tests, examples/aot)
python3 -m pip install -q -e '.[test]'
