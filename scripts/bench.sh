#!/usr/bin/env bash
# bench.sh - the benchmark sweep: installs what it needs, builds Release with the harness,
# runs it, and turns the JSON into Markdown tables and a plot under out/bench/.
# Usage: scripts/bench.sh [--full] [--publish] [-DCMAKE_VAR=VALUE ...] [-- ln_bench flags]
#   (default)   quick sweep, about 2 minutes on 2 cores: every cols hot, 5 cols cold
#   --full      every cols in both regimes, more repetitions (about 20 minutes), and
#               PyTorch's bf16 LayerNorm where torch imports (scripts/bench_torch_bf16.py)
#   --ext       the 1.1 entry points (RMSNorm, fused residual add, strided rows) beside the
#               plain API at 768, 1600, 4096 and 12288 columns; results in out/bench-ext/
#   --publish   also copy the table and plot to docs/bench/ and refresh the README's table
#   -D...       passed to CMake (own build dir), e.g. -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON
#   -- ...      passed to ln_bench, e.g. -- --benchmark_filter=fwd/hot/
# LN_SKIP_DEPS=1 skips the apt step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sweep=quick publish=0 cmake_args=() bench_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --full) sweep=full ;;
    --quick) sweep=quick ;;
    --ext) sweep=ext ;;
    --publish) publish=1 ;;
    -D*) cmake_args+=("$1") ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

out=$root/out/bench
[ "$sweep" != ext ] || out=$root/out/bench-ext
mkdir -p "$out"
# apt's hundreds of lines go to a log, shown only if the install fails.
if [ "${LN_SKIP_DEPS:-0}" != 1 ]; then
  "$root/scripts/deps.sh" bench > "$out/deps.log" 2>&1 \
    || { cat "$out/deps.log"; echo "bench: installing packages failed (above)" >&2; exit 1; }
  installed=$(sed -n 's/^deps: installing //p' "$out/deps.log")
  echo "bench: packages ${installed:-already there}${installed:+ installed} (log: $out/deps.log)"
fi

# Extra CMake settings get their own, freshly configured build dir, so they never stick
# to the default one through the CMake cache.
build=$root/build-bench
if [ ${#cmake_args[@]} -gt 0 ]; then
  build=$root/build-bench-custom
  rm -f "$build/CMakeCache.txt"
fi
mkdir -p "$build"
echo "bench: building Release in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLN_BUILD_BENCH=ON \
  -DLN_BUILD_TESTS=OFF "${cmake_args[@]}" > "$out/configure.log" 2>&1 \
  || { cat "$out/configure.log"; exit 1; }
grep 'liblayernorm bench:' "$out/configure.log" | sed 's/^-- liblayernorm bench: /bench: /' || true
cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 \
  || { tail -n 40 "$out/build.log"; exit 1; }

echo "bench: running the $sweep sweep (console log: $out/console.txt)"
rm -f "$out/results.json"
start=$SECONDS
# Interleaving: every repetition of every benchmark in random order, so a noisy minute on
# a shared machine spreads over all competitors instead of hitting one of them.
# The results go to the console log; stderr stays here for ln_bench's progress meter (one
# line redrawn on a terminal, a line per tenth of the sweep in a log) and its errors.
"$build/bench/ln_bench" --ln_sweep="$sweep" --benchmark_enable_random_interleaving=true \
  --benchmark_display_aggregates_only=true --benchmark_out="$out/results.json" \
  --benchmark_out_format=json "${bench_args[@]}" > "$out/console.txt" \
  || { tail -n 20 "$out/console.txt"; exit 1; }
took=$((SECONDS - start))

report=(/usr/bin/python3 "$root/bench/report.py" "$out/results.json" --out "$out")
# PyTorch's bf16 LayerNorm beside ours (the C++ harness cannot call Python): --full only,
# where torch imports.
if [ "$sweep" = full ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "bench: PyTorch's bf16 LayerNorm (scripts/bench_torch_bf16.py)"
  /usr/bin/python3 "$root/scripts/bench_torch_bf16.py" --out "$out/torch_bf16.json" \
    > "$out/torch_bf16.md" || { cat "$out/torch_bf16.md"; exit 1; }
  report+=(--torch "$out/torch_bf16.json")
fi
if [ $publish = 1 ]; then
  mkdir -p "$root/docs/bench"
  "${report[@]}" --readme "$root/README.md"
  cp "$out/table.md" "$out/bench.png" "$root/docs/bench/"
  echo "bench: published docs/bench/table.md, docs/bench/bench.png and the README table"
else
  "${report[@]}"
fi
echo
echo "bench: the $sweep sweep took $took s"
echo "bench: JSON     $out/results.json"
echo "bench: tables   $out/table.md (all kernels and competitors), $out/summary.md (README)"
echo "bench: plot     $out/bench.png"
