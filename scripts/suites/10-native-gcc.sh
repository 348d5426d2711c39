#!/usr/bin/env bash
# 10-native-gcc.sh - the CMocka suites built with gcc, every kernel this CPU runs, and the
# GPT-2 block example (finite differences; against PyTorch when installed).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-gcc
CC=gcc ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_BUILD_EXAMPLES=ON
# What the kernel (not our CPUID code) says this CPU has, intersected with what the
# build compiled: test_dispatch requires each of these to be available.
export LN_EXPECT_AVAILABLE=$(ln_expected_isas "$dir")
echo "expected available ISAs: $LN_EXPECT_AVAILABLE"
ln_ctest native-gcc "$dir"
