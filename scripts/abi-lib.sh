# abi-lib.sh - sourced after lib.sh: the ABI gate (abidiff against the committed baseline)
# and the export check, shared by suites/60-package.sh, abi-check.sh and abi-update.sh.

LN_ABI_BASE=$LN_ROOT/abi/liblayernorm.abi
LN_ABI_CONSTS=$LN_ROOT/abi/constants.txt

# ln_abi_build DIR: the shared library as the baseline is made from it (gcc -O2 -g, no
# tests). abidiff needs the DWARF: without it a changed signature goes unnoticed. Source
# paths in the DWARF are made relative so the baseline does not depend on the checkout.
ln_abi_build() {
  CC=gcc ln_configure_build "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_BUILD_TESTS=OFF \
    "-DCMAKE_C_FLAGS=-fdebug-prefix-map=$LN_ROOT/="
}

ln_abi_need_debug() {
  # Not `readelf | grep -q`: grep's early exit would fail the pipe under pipefail.
  case $(readelf -S "$1") in *.debug_info*) return 0 ;; esac
  echo "abi: $1 has no debug info; abidiff could not see signatures" >&2
  return 1
}

# ln_abi_dump LIB OUT: the baseline text, without paths, line numbers or the internal
# types and functions of src/ (only exported interfaces and what include/ declares), so
# it changes only when the ABI does.
ln_abi_dump() {
  ln_abi_need_debug "$1" || return 1
  abidw --exported-interfaces-only --no-corpus-path --no-comp-dir-path --no-show-locs \
    --headers-dir "$LN_ROOT/include" --drop-private-types --out-file "$2" "$1"
}

# ln_abi_diff LIB: fails (abidiff's non-zero exit) on any change to what the baseline has:
# a removed function, a changed signature or type. Added functions are how the API grows
# (new version nodes), so they are not reported.
ln_abi_diff() {
  ln_abi_need_debug "$1" || return 1
  local rc=0
  abidiff --no-added-syms --fail-no-debug-info "$LN_ABI_BASE" "$1" || rc=$?
  [ $rc = 0 ] && echo "abi: no incompatible change against abi/liblayernorm.abi" \
    || echo "abi: abidiff exit $rc: incompatible change (see above)" >&2
  return $rc
}

# ln_abi_symbols LIB: the dynamic symbol table holds only ln_* functions plus the
# version-node names themselves (LAYERNORM_1.0 ... as absolute symbols, type A, which
# the version script creates), and it matches the LN_API declarations of the header
# both ways: nothing private leaks, nothing public was left out of layernorm.map.
ln_abi_symbols() {
  local lib=$1 bad declared exported missing extra
  bad=$(nm -D --defined-only "$lib" | awk '
    $2 == "A" && $3 ~ /^LAYERNORM_[0-9]+\.[0-9]+$/ { next }
    { n = $3; sub(/@.*/, "", n); if (n !~ /^ln_/) print }')
  declared=$(grep -E '^LN_API ' "$LN_ROOT/include/layernorm.h" |
    grep -oE '\bln_[a-z0-9_]+ *\(' | tr -d '( ' | LC_ALL=C sort -u)
  exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
    grep '^ln_' | LC_ALL=C sort -u || true)
  missing=$(LC_ALL=C comm -23 <(echo "$declared") <(echo "$exported"))
  extra=$(LC_ALL=C comm -13 <(echo "$declared") <(echo "$exported"))
  [ -z "$bad" ] || echo "abi: exported symbols outside ln_*:"$'\n'"$bad" >&2
  [ -z "$missing" ] || echo "abi: declared LN_API but not exported (layernorm.map?): $missing" >&2
  [ -z "$extra" ] || echo "abi: exported but not declared LN_API in layernorm.h: $extra" >&2
  [ -z "$bad$missing$extra" ] || return 1
  echo "abi: exports = the $(echo "$declared" | wc -l) LN_API functions of layernorm.h," \
    "versions $(nm -D --defined-only "$lib" | awk '$2 == "A" { printf "%s ", $3 }')"
}

# ln_abi_constants OUT: "NAME VALUE" for every LN_* enum constant of layernorm.h (status
# codes, ISA ids), valued by the compiler. abidiff cannot see these: they appear in no
# signature, yet callers compile them in.
ln_abi_constants() {
  local names n tmp rc=0
  names=$(sed -nE 's/^[[:space:]]*(LN_[A-Z0-9_]+)[[:space:]]*=.*/\1/p' "$LN_ROOT/include/layernorm.h")
  tmp=$(mktemp -d)
  {
    printf '#include <stdio.h>\n#include "layernorm.h"\nint main(void)\n{\n'
    for n in $names; do printf '    printf("%%s %%d\\n", "%s", (int)%s);\n' "$n" "$n"; done
    printf '    return 0;\n}\n'
  } > "$tmp/consts.c"
  gcc -I"$LN_ROOT/include" -o "$tmp/consts" "$tmp/consts.c" && "$tmp/consts" | LC_ALL=C sort > "$1" || rc=1
  rm -rf "$tmp"
  return $rc
}

# ln_abi_constants_check: every constant of abi/constants.txt keeps its value; new ones
# may be added.
ln_abi_constants_check() {
  local now gone
  [ -f "$LN_ABI_CONSTS" ] || { echo "abi: no abi/constants.txt; run scripts/abi-update.sh" >&2; return 1; }
  now=$(mktemp)
  ln_abi_constants "$now" || { rm -f "$now"; return 1; }
  gone=$(LC_ALL=C comm -23 "$LN_ABI_CONSTS" "$now")
  rm -f "$now"
  if [ -n "$gone" ]; then
    echo "abi: status codes or ISA ids changed or removed (baseline values):"$'\n'"$gone" >&2
    return 1
  fi
  echo "abi: the $(wc -l < "$LN_ABI_CONSTS") status codes and ISA ids of abi/constants.txt unchanged"
}
