#!/usr/bin/env bash
# 50-threads.sh - the threading tests under ThreadSanitizer (gcc + libgomp): bitwise
# identity on 1..8 threads per ISA, the setting and the forked child (test_fork: after a
# host OpenMP region, a library team, or neither). Any race fails.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-threads-tsan
tsan="-fsanitize=thread -fno-omit-frame-pointer"
mkdir -p "$dir"
cmake -S "$LN_ROOT" -B "$dir" -DLN_WERROR=ON -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$tsan" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$LN_JOBS" --target test_threads test_threads_bf16_gelu test_threads_api test_fork > "$dir.build.log" 2>&1 \
  || { tail -n 60 "$dir.build.log"; exit 1; }
# libgomp is not TSan-instrumented; src/threads.c annotates its fork/barrier/join edges,
# so no suppressions are needed. Passive waiting keeps 8 sleeping threads off 2 cores.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" OMP_WAIT_POLICY=passive
ln_ctest threads-tsan "$dir" -R '^(test_threads\.|test_threads_bf16_gelu\.|threads_api|fork\.)'
