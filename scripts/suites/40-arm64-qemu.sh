#!/usr/bin/env bash
# 40-arm64-qemu.sh - the CMocka suites cross-built for AArch64, run under qemu-aarch64:
# NEON on a CPU model without SVE, SVE at 128..2048 bits, and the LN_MAX_ISA caps.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v $tool > /dev/null || { echo "arm64: $tool missing (scripts/deps.sh test)"; exit 1; }
done
# The toolchain file names the cross compiler; host compilers and flags must not leak in.
unset CC CXX CFLAGS CXXFLAGS LDFLAGS
dir=$LN_OUT/build-arm64
ln_configure_build "$dir" -DCMAKE_TOOLCHAIN_FILE="$LN_ROOT/cmake/toolchain-aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
ln_ctest arm64-qemu "$dir"
