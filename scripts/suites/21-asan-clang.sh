#!/usr/bin/env bash
# 21-asan-clang.sh - the whole ctest suite under AddressSanitizer + UBSan, built with
# clang-14, whose ASan also checks masked loads and stores (AVX2 maskload, AVX-512 masks).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../sanitize-env.sh"
dir=$LN_OUT/build-asan-clang
CC=clang-14 ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_SANITIZE=address,undefined
ln_ctest asan-clang "$dir"
