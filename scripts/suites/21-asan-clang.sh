#!/usr/bin/env bash
# 21-asan-clang.sh - the whole ctest suite under AddressSanitizer + UBSan, built with
# clang-14, whose ASan also checks AVX-512 masked loads/stores (llvm.masked.*). It does NOT
# check AVX2 _mm256_maskload_ps (an x86-specific intrinsic, left uninstrumented): the
# guard-page tests and valgrind (22-valgrind.sh) cover those.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../sanitize-env.sh"
dir=$LN_OUT/build-asan-clang
CC=clang-14 ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_SANITIZE=address,undefined
ln_ctest asan-clang "$dir"
