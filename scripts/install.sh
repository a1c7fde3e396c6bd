#!/usr/bin/env bash
# Install everything PITCHFORK needs on a Debian machine: cross toolchains + qemu (apt), Python packages (pip),
# then llvmlite rebuilt against Debian's release LLVM 22 (docs/LLVMLITE.md says why).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# llvm-22: llvm-mca, llvm-mc, llc for `pitchfork bench`; build-essential: gcc/g++/make (AOT tests, examples/aot);
# llvm-22-dev + cmake: to build llvmlite against Debian's libLLVM-22 (below)
$SUDO apt-get install -y -qq build-essential cmake qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross clang lld llvm llvm-22 llvm-22-dev >/dev/null
python3 -m pip install -q -e '.[test]'
# llvmlite's PyPI wheel links an LLVM built with assertions: 1.3-2x slower on the same IR, and an assertion
# aborts the process. The same llvmlite version (the one pyproject.toml pins) is built from its sdist
# against Debian's release libLLVM-22 instead (LLVMLITE_SHARED: linked to libLLVM-22.so, no static LLVM
# archives needed). About 2 minutes on 2 cores. scripts/check_llvmlite.py fails the install if the result
# is not that build.
LLVMLITE_VERSION="$(python3 -c 'import importlib.metadata as m; print(m.version("llvmlite"))')"
LLVMLITE_SHARED=1 CMAKE_ARGS="-DLLVM_DIR=$(llvm-config-22 --cmakedir)" \
  python3 -m pip install -q --no-deps --force-reinstall --no-binary llvmlite "llvmlite==${LLVMLITE_VERSION}"
python3 scripts/check_llvmlite.py
