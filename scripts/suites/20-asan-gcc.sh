#!/usr/bin/env bash
# 20-asan-gcc.sh - the whole ctest suite under AddressSanitizer + UBSan, built with gcc.
# gcc's ASan does not check masked vector loads (21-asan-clang.sh does); every finding
# aborts (-fno-sanitize-recover), and leaks are findings too.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../sanitize-env.sh"
dir=$LN_OUT/build-asan-gcc
CC=gcc ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_SANITIZE=address,undefined
ln_ctest asan-gcc "$dir"
