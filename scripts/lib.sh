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

# ln_expected_isas BUILD_DIR: comma list of ISAs that /proc/cpuinfo's flags (the OS's
# view, independent of our detection code) and the build's ln_config.h both offer.
ln_expected_isas() {
  local cfg="$1/generated/ln_config.h" flags list=scalar
  flags=" $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | cut -d: -f2) "
  has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
  compiled() { grep -q "define LN_HAVE_$1 1" "$cfg"; }
  if compiled AVX2 && has avx2 fma; then list+=,avx2; fi
  if compiled AVX512 && has avx512f avx512bw avx512vl avx512dq; then list+=,avx512; fi
  if compiled NEON && has asimd; then list+=,neon; fi
  if compiled SVE && has sve; then list+=,sve; fi
  echo "$list"
}
