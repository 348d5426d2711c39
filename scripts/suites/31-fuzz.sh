#!/usr/bin/env bash
# 31-fuzz.sh - a bounded libFuzzer run (LN_FUZZ_SECONDS, default 90) of the differential
# target under ASan + UBSan (clang-14), starting from the committed seed corpus. New
# inputs go to $LN_OUT/fuzz-corpus; a crash leaves its input as $LN_OUT/fuzz-crash-*.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../sanitize-env.sh"
dir=$LN_OUT/build-fuzz
# 90 s: the out-of-line ASan checks (cmake/LnSanitize.cmake) run ~20 % fewer inputs per
# second than inline ones did; 90 s gives more inputs than the 60 s of inline checks did.
secs=${LN_FUZZ_SECONDS:-90}
mkdir -p "$dir" "$LN_OUT/fuzz-corpus"
cmake -S "$LN_ROOT" -B "$dir" -DLN_WERROR=ON -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLN_FUZZ=ON -DLN_SANITIZE=address,undefined \
  > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$LN_JOBS" --target fuzz_layernorm > "$dir.build.log" 2>&1 \
  || { tail -n 60 "$dir.build.log"; exit 1; }
log=$LN_OUT/fuzz.log rc=0
# One job: the machine's other core belongs to everyone else.
"$dir/tests/fuzz/fuzz_layernorm" "$LN_OUT/fuzz-corpus" "$LN_ROOT/tests/fuzz/corpus" \
  -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$LN_OUT/fuzz-crash-" > "$log" 2>&1 || rc=$?
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
grep -E 'stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" || true
if [ $rc != 0 ]; then
  grep -E 'fuzz:|ERROR|SUMMARY|Test unit written' "$log" | head -n 20
  ln_record fuzz 0 1 0
  exit 1
fi
ln_record fuzz 1 0 0
