#!/usr/bin/env bash
# deps.sh - installs the Debian packages the build, tests and benchmarks need (idempotent).
# Usage: scripts/deps.sh [build|test|bench]   (default: test, which is everything CI needs)
set -euo pipefail
what=${1:-test}

build_pkgs=(gcc g++ make cmake pkgconf libcmocka-dev libsleef-dev)
bench_pkgs=(libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev python3-matplotlib python3-numpy)
test_pkgs=(libsleef-dev libbenchmark-dev clang-14 libclang-rt-14-dev valgrind abigail-tools
  python3-numpy python3-pytest python3-torch qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
  python3-venv python3-setuptools python3-pip python3-wheel  # pip install ./python in a venv
  libc6-dev-arm64-cross
  libopenblas-dev  # examples/gpt2_block's matmuls (cblas_sgemm)
  libomp-14-dev)  # clang builds: clang's OpenMP runtime (gcc's libgomp comes with gcc)
arm64_pkgs=(libcmocka-dev:arm64 libsleef-dev:arm64 libbenchmark-dev:arm64 pkgconf:arm64
  libgomp1:arm64)  # OpenMP runtime of the threaded library under qemu

case $what in
  build) want=("${build_pkgs[@]}") ;;
  bench) want=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac

missing() { for p in "$@"; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"; done; }
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$@"
}
updated=0
todo=$(missing "${want[@]}")
if [ -n "$todo" ]; then
  echo "deps: installing $(echo $todo)"
  apt-get -o DPkg::Lock::Timeout=600 update -q && updated=1
  # shellcheck disable=SC2086
  apt_install $todo
fi
if [ "$what" = test ]; then
  # The arm64 multiarch libraries for the cross-built suite under qemu.
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    updated=0
  fi
  todo=$(missing "${arm64_pkgs[@]}")
  if [ -n "$todo" ]; then
    [ $updated = 1 ] || apt-get -o DPkg::Lock::Timeout=600 update -q
    # shellcheck disable=SC2086
    apt_install $todo
  fi
fi
