#!/usr/bin/env bash
# 23-qemu-x86.sh - the real CPU detection on CPUs this machine is not: qemu-x86_64 -cpu max
# (AVX2 + FMA, no AVX-512: must pick avx2) and -cpu qemu64 (neither: must pick scalar), both
# AMD of family 0xf (cold hints prefetcht1); the detection test alone on EPYC (AMD Zen:
# prefetchnta) and Haswell (Intel: prefetcht1).
# Guard-page tests are left out (label "guard": qemu 7.2 faults on masked-off vmaskmovps
# lanes, a qemu bug), and the build is unsanitized (sanitizers under qemu blow up memory).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-qemu-x86
# The kernel suites' largest shapes (8M-element backward) take minutes here; the small
# shapes still cover every tail and block path.
export LN_TEST_QUICK=1
rc=0
for cpu in max:scalar,avx2:t1:all qemu64:scalar:t1:all EPYC:scalar,avx2:nta:detect \
           Haswell:scalar,avx2:t1:detect; do
  IFS=: read -r model expect hints scope <<< "$cpu"
  # Reconfiguring changes only the test commands; the objects are built once.
  CC=gcc ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CROSSCOMPILING_EMULATOR=qemu-x86_64;-cpu;$model" -DLN_EXPECT_CPU="$expect" \
    -DLN_EXPECT_HINTS="$hints"
  echo "--- qemu-x86_64 -cpu $model (expects $expect, $hints hints)"
  if [ "$scope" = all ]; then
    ln_ctest "qemu-x86-$model" "$dir" -LE guard --timeout 900 || rc=1
  else
    ln_ctest "qemu-x86-$model" "$dir" -R '^cpu_detect$' || rc=1
  fi
done
exit $rc
