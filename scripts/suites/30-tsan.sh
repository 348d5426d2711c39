#!/usr/bin/env bash
# 30-tsan.sh - the concurrency test (workers vs. a thread flipping the ISA cap) under
# ThreadSanitizer (gcc: clang-14's shared TSan runtime crashes on this kernel): any race
# aborts the test.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../sanitize-env.sh"
dir=$LN_OUT/build-tsan
mkdir -p "$dir"
cmake -S "$LN_ROOT" -B "$dir" -DLN_WERROR=ON -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_SANITIZE=thread > "$dir.configure.log" 2>&1 \
  || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$LN_JOBS" --target test_concurrency > "$dir.build.log" 2>&1 \
  || { tail -n 60 "$dir.build.log"; exit 1; }
ln_ctest tsan "$dir" -L threads
