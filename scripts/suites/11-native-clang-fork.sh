#!/usr/bin/env bash
# 11-native-clang-fork.sh - the fork tests (host OpenMP region first, library team first,
# neither; then a threaded call in a forked child) built with clang-14, so on clang's
# OpenMP runtime (libomp, from libomp-14-dev) instead of gcc's libgomp. The native gcc
# suite runs them on libgomp; the sanitizer suites run both again under ASan.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-clang-fork
mkdir -p "$dir"
cmake -S "$LN_ROOT" -B "$dir" -DLN_WERROR=ON -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$dir.configure.log" 2>&1 \
  || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$LN_JOBS" --target test_fork > "$dir.build.log" 2>&1 \
  || { tail -n 60 "$dir.build.log"; exit 1; }
# The runtime the test and library really loaded: libomp, or this suite proves nothing.
# (Not `ldd | grep -q`: grep's early exit would fail the pipe under pipefail.)
case $(ldd "$dir/tests/test_fork") in
  *libomp.so*) ;;
  *) echo "test_fork is not linked against libomp"; ldd "$dir/tests/test_fork"; exit 1 ;;
esac
ln_ctest native-clang-fork "$dir" -L fork
