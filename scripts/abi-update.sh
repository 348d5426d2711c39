#!/usr/bin/env bash
# abi-update.sh - refreshes the committed baseline abi/liblayernorm.abi after the API grew
# on purpose (new functions in a new version node). One command, run at merge time.
# It refuses a baseline that would hide a break (a changed or removed function) unless
# --allow-break is given, which only a new major version (SONAME .so.2) may use.
# Usage: scripts/abi-update.sh [--allow-break]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$LN_ROOT/scripts/abi-lib.sh"
dir=$LN_OUT/build-abi
ln_abi_build "$dir"
lib=$dir/liblayernorm.so
ln_abi_symbols "$lib"
if [ -f "$LN_ABI_BASE" ] && [ "${1:-}" != --allow-break ] &&
  ! { ln_abi_diff "$lib" && { [ ! -f "$LN_ABI_CONSTS" ] || ln_abi_constants_check; }; }; then
  echo "abi-update: refusing to bless an incompatible change (see above)" >&2
  exit 1
fi
mkdir -p "$(dirname "$LN_ABI_BASE")"
ln_abi_dump "$lib" "$LN_ABI_BASE"
ln_abi_constants "$LN_ABI_CONSTS"
echo "abi-update: wrote abi/liblayernorm.abi ($(grep -c '<elf-symbol ' "$LN_ABI_BASE") symbols)" \
  "and abi/constants.txt ($(wc -l < "$LN_ABI_CONSTS") constants)"
git -C "$LN_ROOT" --no-pager diff --stat -- abi/ || true
