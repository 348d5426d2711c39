#!/usr/bin/python3
"""bench_torch_bf16.py - PyTorch's bf16 LayerNorm in elements/s, beside ln_bench's bf16 cases.

Usage: scripts/bench_torch_bf16.py [--out FILE.json] [--reps N]
Shapes and regimes as ln_bench's (bench/harness.cc): hot, x of 256 KiB as float (rows =
65536 / cols), the same call repeated; warm, the same with x of 12 MiB as float (rows = 3 Mi
/ cols); cold, x of 64 MiB as float (rows = 16 Mi / cols),
caches evicted before every timed call by writing a buffer larger than any L3 here. One
thread (torch.set_num_threads(1)), as ln_bench's single-thread figures. Weight and bias
are bf16 too: PyTorch 1.13's CPU layer_norm wants them in the input's dtype. Forward is
F.layer_norm under no_grad (what inference calls), backward aten's
native_layer_norm_backward (dx, dweight, dbias), without autograd's bookkeeping.
Prints a Markdown table (G elements/s, median of the repetitions) and writes the JSON
that bench/report.py --torch merges into its bf16 table.
"""
import argparse
import json
import statistics
import sys
import time

import torch

ELEMS = {"hot": 65536, "warm": 3 * 1024 * 1024, "cold": 16 * 1024 * 1024}
EPS = 1e-5
COLS = (768, 4096)


def timed(call, evict, reps, inner):
    """Median over reps of the per-call seconds of `inner` back-to-back calls."""
    out = []
    for _ in range(reps):
        if evict is not None:
            evict.add_(1)  # writes every line: x, dy and the outputs leave the caches
        t0 = time.perf_counter()
        for _ in range(inner):
            call()
        out.append((time.perf_counter() - t0) / inner)
    return out


def measure(cols, regime, reps):
    rows = ELEMS[regime] // cols
    g = torch.Generator().manual_seed(cols)
    x = (torch.rand(rows, cols, generator=g) * 4.5 - 2).to(torch.bfloat16)
    dy = (torch.rand(rows, cols, generator=g) * 2 - 1).to(torch.bfloat16)
    w = (torch.rand(cols, generator=g) + 0.5).to(torch.bfloat16)
    b = (torch.rand(cols, generator=g) - 0.5).to(torch.bfloat16)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, EPS)
    fwd = lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, EPS)
    bwd = lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, w, b,
                                                            [True, True, True])
    evict = torch.zeros(64 * 1024 * 1024, dtype=torch.float32) if regime == "cold" else None
    inner = {"hot": 20, "warm": 2, "cold": 1}[regime]
    res = []
    for op, call in (("bf16_fwd", fwd), ("bf16_bwd", bwd)):
        call()  # first-call setup outside the clock
        secs = timed(call, evict, reps, inner)
        res.append({"op": op, "regime": regime, "cols": cols, "rows": rows,
                    "gelems": [rows * cols / s * 1e-9 for s in secs]})
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    runs = [r for cols in COLS for rg in ELEMS for r in measure(cols, rg, a.reps)]
    print(f"### PyTorch {torch.__version__} bf16 LayerNorm, one thread (G elements/s, median)")
    print("\n| op | regime | cols | rows | G elements/s (min–max) |\n|---|---|---|---|---|")
    for r in runs:
        v = r["gelems"]
        print(f"| {r['op']} | {r['regime']} | {r['cols']} | {r['rows']} | "
              f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f}) |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"torch": torch.__version__, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
