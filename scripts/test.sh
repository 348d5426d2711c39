#!/usr/bin/env bash
# test.sh - the whole test suite (what CI runs): installs what is missing, then runs every
# scripts/suites/*.sh in order and ends with one line of totals.
# Usage: scripts/test.sh [SUITE-NAME-PATTERN]   e.g. scripts/test.sh native
set -uo pipefail
export LN_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LN_OUT=${LN_OUT:-$LN_ROOT/out}
rm -rf "$LN_OUT" && mkdir -p "$LN_OUT"
[ "${LN_SKIP_DEPS:-0}" = 1 ] || "$LN_ROOT/scripts/deps.sh" test || exit 1

pattern=${1:-}
status=0
for suite in "$LN_ROOT"/scripts/suites/*.sh; do
  name=$(basename "$suite" .sh)
  [[ -z $pattern || $name == *$pattern* ]] || continue
  echo "=== suite $name"
  start=$SECONDS
  before=$(cat "$LN_OUT/ledger" 2>/dev/null | wc -l)
  if ! bash "$suite"; then
    echo "=== suite $name FAILED"
    status=1
    # A suite that died before recording a failure still counts as one.
    tail -n +$((before + 1)) "$LN_OUT/ledger" 2>/dev/null | awk '$3 > 0 {f=1} END {exit !f}' \
      || echo "$name 0 1 0" >> "$LN_OUT/ledger"
  fi
  echo "=== suite $name took $((SECONDS - start)) s"
done

if [ ! -s "$LN_OUT/ledger" ]; then
  echo "test.sh: no suite matched '$pattern'" >&2
  exit 1
fi
# The accuracy suites' worst errors per row kind and kernel, over every build that ran them
# (native, emulated AVX-512, Arm under qemu, ...): the figures a closing note quotes.
logs=$(ls "$LN_OUT"/build-*/Testing/Temporary/LastTest.log 2>/dev/null)
if [ -n "$logs" ] && python3 "$LN_ROOT/tools/accuracy_table.py" $logs > "$LN_OUT/accuracy.md"; then
  echo "accuracy: worst errors per row kind and kernel in $LN_OUT/accuracy.md"
fi
echo
echo "per suite (passed failed skipped):"
column -t "$LN_OUT/ledger" 2>/dev/null || cat "$LN_OUT/ledger"
read -r p f s < <(awk '{p+=$2; f+=$3; s+=$4} END {print p+0, f+0, s+0}' "$LN_OUT/ledger")
[ "$f" = 0 ] || status=1
echo "tests: $p passed, $f failed, $s skipped"
exit $status
