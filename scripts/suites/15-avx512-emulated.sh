#!/usr/bin/env bash
# 15-avx512-emulated.sh - the build whose AVX-512 kernel runs on scalar stand-ins for its
# intrinsics (tests/emu/immintrin.h), as CI machines without AVX-512 build it. EVERY ctest
# entry of that build runs, API-level ones too: whatever it dispatches for the AVX-512 id
# must run on any x86-64 CPU, so a kernel that is not emulated fails here (SIGILL on a
# CPU without AVX-512). On an AVX-512 CPU test_dispatch_ext proves the same by address.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: nothing to emulate"; ln_record avx512-emulated 0 0 1; exit 0; }
dir=$LN_OUT/build-avx512-emu
CC=gcc ln_configure_build "$dir" -DLN_EMULATE_AVX512=ON
# The build reports AVX-512 on any CPU, which test_cpu_detect (when asked) and
# test_dispatch_ext check; ln_expected_isas would not know that.
ln_ctest avx512-emulated "$dir" --timeout 900
