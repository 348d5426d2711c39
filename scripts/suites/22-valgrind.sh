#!/usr/bin/env bash
# 22-valgrind.sh - the whole ctest suite under valgrind memcheck: zero errors, zero leaks.
# valgrind 3.19 hides AVX-512 from CPUID, so dispatch runs AVX2 here; test_cpu_detect
# asserts exactly that (scalar + avx2 reported, avx2 picked when compiled in), and its
# CPUID is always an Intel one (GenuineIntel, family 6): cold hints prefetcht1.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-valgrind
# The kernel suites' largest shapes (8M-element backward) take minutes here; the small
# shapes still cover every tail and block path.
export LN_TEST_QUICK=1
vg="valgrind;-q;--error-exitcode=99;--leak-check=full;--show-leak-kinds=definite,indirect,possible"
vg="$vg;--errors-for-leak-kinds=definite,indirect,possible"
# test_api replaces calloc to reach LN_ERR_NOMEM: keep valgrind's hands off it.
vg="$vg;--soname-synonyms=somalloc=nouserintercepts"
# libgomp never joins its worker threads: their thread-local blocks read as "possibly
# lost" at exit. Only those libgomp frames are suppressed (tests/libgomp.supp).
vg="$vg;--suppressions=$LN_ROOT/tests/libgomp.supp"
# ctest prefixes every test executable with the emulator; not cross-compiling, cmake
# 3.25 (policy CMP0158 unset) still honours it.
CC=gcc ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CROSSCOMPILING_EMULATOR=$vg" -DLN_EXPECT_CPU=scalar,avx2 \
  -DLN_EXPECT_HINTS=t1
ln_ctest valgrind "$dir" --timeout 900
