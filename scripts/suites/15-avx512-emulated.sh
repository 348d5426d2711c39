#!/usr/bin/env bash
# 15-avx512-emulated.sh - the build whose AVX-512 kernels (f32, bf16 in both roundings,
# GELU) run on scalar stand-ins for their intrinsics
# (tests/emu/immintrin.h), as CI machines without AVX-512 build it. EVERY ctest
# entry of that build runs, API-level ones too, and the library must hold no AVX-512
# instruction at all: whatever it dispatches for the AVX-512 id runs on any x86-64 CPU.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: nothing to emulate"; ln_record avx512-emulated 0 0 1; exit 0; }
dir=$LN_OUT/build-avx512-emu
CC=gcc ln_configure_build "$dir" -DLN_EMULATE_AVX512=ON
# No zmm register and no opmask instruction anywhere in the library: an AVX-512 kernel
# that escaped the emulation would SIGILL on the CPUs this build exists for, and this CPU
# may have AVX-512 and so not notice by running it.
if objdump -d --no-show-raw-insn "$dir/liblayernorm.so" | grep -qE '%zmm|%k[1-7]|vcvtne2?ps2bf16'; then
  echo "avx512-emulated: real AVX-512 instructions in the emulated library:"
  objdump -d --no-show-raw-insn "$dir/liblayernorm.so" | grep -E '%zmm|%k[1-7]|vcvtne2?ps2bf16' | head
  ln_record avx512-emulated 0 1 0
  exit 1
fi
ln_record avx512-emulated 1 0 0
# The build reports AVX-512 on any CPU, which test_cpu_detect (when asked) checks;
# ln_expected_isas would not know that.
ln_ctest avx512-emulated "$dir" --timeout 900
