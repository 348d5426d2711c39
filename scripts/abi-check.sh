#!/usr/bin/env bash
# abi-check.sh - the ABI gate by hand: export check, abidiff and constants against abi/.
# Usage: scripts/abi-check.sh [LIB.so]   (without LIB: builds one in $LN_OUT/build-abi)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$LN_ROOT/scripts/abi-lib.sh"
lib=${1:-}
if [ -z "$lib" ]; then
  ln_abi_build "$LN_OUT/build-abi"
  lib=$LN_OUT/build-abi/liblayernorm.so
fi
rc=0
ln_abi_symbols "$lib" || rc=1
ln_abi_diff "$lib" || rc=1
ln_abi_constants_check || rc=1
exit $rc
