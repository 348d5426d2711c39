#!/usr/bin/env bash
# 15-avx512-emulated.sh - the AVX-512 kernels' 16-lane logic (f32, bf16 in both roundings,
# GELU) through every per-ISA suite on CPUs without AVX-512 (this project's machine kind):
# tests/emu/immintrin.h and sleef.h stand in for the intrinsics and SLEEF's vector calls.
# On an AVX-512 CPU the native suite runs the real thing as well.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: nothing to emulate"; ln_record avx512-emulated 0 0 1; exit 0; }
dir=$LN_OUT/build-avx512-emu
CC=gcc ln_configure_build "$dir" -DLN_EMULATE_AVX512=ON
ln_ctest avx512-emulated "$dir" -R '\.avx512(-shift)?$'
