#!/usr/bin/env bash
# 10-native-gcc.sh - the CMocka suites built with gcc, every kernel this CPU runs.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-gcc
CC=gcc ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
ln_ctest native-gcc "$dir"
