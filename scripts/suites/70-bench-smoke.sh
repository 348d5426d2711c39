#!/usr/bin/env bash
# 70-bench-smoke.sh - the benchmark harness still builds (-Werror) and every case runs once
# and matches the scalar oracle; speed is not judged here (scripts/bench.sh measures it).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$LN_OUT/build-bench-smoke
ln_configure_build "$dir" -DCMAKE_BUILD_TYPE=Release -DLN_BUILD_BENCH=ON -DLN_BUILD_TESTS=OFF \
  || { ln_record bench-smoke 0 1 0; exit 1; }
json=$LN_OUT/bench-smoke.json
"$dir/bench/ln_bench" --ln_sweep=smoke --benchmark_out="$json" --benchmark_out_format=json \
  > "$LN_OUT/bench-smoke.log" 2>&1 || { tail -n 20 "$LN_OUT/bench-smoke.log"; ln_record bench-smoke 0 1 0; exit 1; }
# The tables must build from the JSON too (no plot: matplotlib is a bench-only package).
/usr/bin/python3 "$LN_ROOT/bench/report.py" "$json" --out "$LN_OUT/bench-smoke" --no-plot > /dev/null
# One count per benchmark: passed = a figure, failed = an error (e.g. its output check);
# oneDNN absent from the build is one visible skip.
read -r passed failed skipped < <(/usr/bin/python3 - "$json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
names = {b["run_name"]: b.get("error_occurred", False) for b in doc["benchmarks"]}
for n, err in names.items():
    if err:
        print("bench-smoke: FAILED", n, file=sys.stderr)
# An API case carries its paired ratio to each divisor of the targets its op has in the
# run (harness.cc, partners_of): the stream roof, cold and hot, and hot, oneDNN; and the
# forward's and backward's at 1601 columns their ratio to 1600 (the tail targets). The
# targets are judged by them, so a run without one fails.
cases = {tuple(n.split("/")[:4]) for n in names}
for b in doc["benchmarks"]:
    op, rg, impl, cols = b["run_name"].split("/")[:4]
    if impl != "api" or b.get("error_occurred"):
        continue
    for other, regimes in (("stream", ("cold", "hot")), ("onednn", ("hot",))):
        if rg in regimes and (op, rg, other, cols) in cases and "vs:%s/%s" % (op, other) not in b:
            print("bench-smoke: FAILED", b["run_name"], "has no paired", other, "ratio",
                  file=sys.stderr)
            names[b["run_name"]] = True
    if op in ("fwd", "bwd") and rg in ("hot", "cold") and cols == "1601" \
            and "vs:%s/api@1600" % op not in b:
        print("bench-smoke: FAILED", b["run_name"], "has no paired ratio to 1600 columns",
              file=sys.stderr)
        names[b["run_name"]] = True
bad = sum(names.values())
print(len(names) - bad, bad, int(doc["context"].get("onednn") == "absent"))
PY
)
echo "bench-smoke: $passed benchmarks ran, $failed failed, oneDNN skipped: $skipped"
ln_record bench-smoke "$passed" "$failed" "$skipped"
[ "$failed" = 0 ]
