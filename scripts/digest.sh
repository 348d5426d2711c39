#!/usr/bin/env bash
# digest.sh - hashes of every output of every public operation, per ISA and build
# (native, emulated AVX-512, NEON and SVE under qemu), one line each: run it before and
# after a refactor that must not change behaviour and diff the two files.
# Usage: scripts/digest.sh [OUT-FILE]   (default: out/digest.txt)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/out/digest.txt}
work=${LN_DIGEST_DIR:-$root/out/digest}
mkdir -p "$work" "$(dirname "$out")"
: > "$out"

# build NAME CC [cmake args]: the library alone, and tests/digest.c linked to it.
build() {
  local name=$1 cc=$2; shift 2
  cmake -S "$root" -B "$work/$name" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_BUILD_TESTS=OFF \
    "$@" > "$work/$name.log" 2>&1
  cmake --build "$work/$name" -j "$(nproc)" >> "$work/$name.log" 2>&1
  "$cc" -O2 -std=c11 -I"$root/include" "$root/tests/digest.c" -L"$work/$name" -llayernorm \
    -Wl,-rpath,"$work/$name" -o "$work/$name/digest"
}

# run LABEL CMD...: each line of the digest prefixed with the build/CPU label.
run() {
  local label=$1; shift
  local rc=0
  "$@" > "$work/run.txt" || rc=$?
  if [ "$rc" = 0 ]; then sed "s/^/$label /" "$work/run.txt" >> "$out"; fi
}

build native gcc
for isa in scalar avx2 avx512; do
  for t in 1 2; do run "native-t$t" "$work/native/digest" "$isa" "$t"; done
done

if [ "$(uname -m)" = x86_64 ]; then
  build emu gcc -DLN_EMULATE_AVX512=ON
  run emulated "$work/emu/digest" avx512 1
fi

if command -v aarch64-linux-gnu-gcc > /dev/null && command -v qemu-aarch64 > /dev/null; then
  build arm64 aarch64-linux-gnu-gcc \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake"
  QEMU_CPU=neoverse-n1 run qemu-n1 qemu-aarch64 "$work/arm64/digest" neon 1
  for bytes in 16 32 64 128 256; do
    QEMU_CPU=max,sve-default-vector-length=$bytes run "qemu-sve$((bytes * 8))" \
      qemu-aarch64 "$work/arm64/digest" sve 1
  done
fi
cat "$out"
