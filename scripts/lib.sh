# lib.sh - sourced by the suite scripts: build helpers and the pass/fail/skip ledger.
# Every suite records its counts with ln_record; scripts/test.sh sums them at the end.

LN_ROOT=${LN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
LN_OUT=${LN_OUT:-$LN_ROOT/out}
LN_JOBS=${LN_JOBS:-$(nproc)}
mkdir -p "$LN_OUT"

# ln_record SUITE PASSED FAILED SKIPPED
ln_record() { echo "$1 $2 $3 $4" >> "$LN_OUT/ledger"; }

# ln_configure_build DIR [cmake args...]: a -Werror build of the library and tests.
ln_configure_build() {
  local dir=$1; shift
  cmake -S "$LN_ROOT" -B "$dir" -DLN_WERROR=ON "$@" > "$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$LN_JOBS" > "$dir.build.log" 2>&1 \
    || { tail -n 60 "$dir.build.log"; return 1; }
}

# ln_ctest SUITE DIR [ctest args...]: runs ctest, prints its summary, records the counts.
# Skipped tests (exit code 77: a kernel this CPU lacks) are counted, not passed.
ln_ctest() {
  local suite=$1 dir=$2; shift 2
  local log="$LN_OUT/$suite.ctest.log" rc=0
  (cd "$dir" && ctest --output-on-failure -j "$LN_JOBS" "$@") > "$log" 2>&1 || rc=$?
  sed -n '/tests passed/,$p' "$log"
  [ $rc = 0 ] || grep -E 'Failed|\*\*\*' "$log" | head -n 40
  local total failed skipped
  total=$(sed -nE 's/.* tests failed out of ([0-9]+).*/\1/p' "$log" | tail -n 1)
  failed=$(sed -nE 's/.*, ([0-9]+) tests failed out of.*/\1/p' "$log" | tail -n 1)
  skipped=$(grep -cE '\(Skipped\)$' "$log" || true)
  if [ -z "$total" ]; then
    ln_record "$suite" 0 1 0
    return 1
  fi
  ln_record "$suite" $((total - failed - skipped)) "$failed" "$skipped"
  return $rc
}
