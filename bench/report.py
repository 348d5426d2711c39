#!/usr/bin/python3
"""report.py - turns ln_bench's JSON into the Markdown tables and the GB/s-vs-cols plot.

Usage: bench/report.py RESULTS.json --out DIR [--no-plot] [--torch TORCH.json]
                       [--readme README.md --image PATH --full-table PATH]
Writes DIR/table.md (every kernel and competitor per direction and regime, printed too),
DIR/summary.md (one table: the public API against the roof and oneDNN, then every speed
target met or missed, bench/targets.py) and DIR/bench.png.
With --readme, the block between the README's bench markers is replaced by summary.md,
the plot at --image and a link to --full-table (paths relative to the README).
"""
import argparse
import json
import os
import statistics
import sys

import targets

OPS = {"fwd": "Forward", "bwd": "Backward"}
REGIMES = {"hot": "hot (x ≈ 256 KiB, L2-resident)",
           "cold": "cold (x ≈ 64 MiB, every operand flushed before each call)",
           "warm": "warm (x = 12 MiB, reused: past L2, within a large L3)"}
COMPETITORS = ["naive", "onednn"]
LABELS = {"api": "API", "naive": "naive", "onednn": "oneDNN", "stream": "stream",
          "stream_nt": "stream NT"}
ROOFS = ["stream", "stream_nt"]  # stream_nt: non-temporal stores, cold regime only
BEGIN, END = "<!-- bench:begin (scripts/bench.sh --publish) -->", "<!-- bench:end -->"


def load(path):
    """Repetitions grouped by (op, regime, impl, cols) -> {'gbs': [...], 'ns': [...]}."""
    with open(path) as f:
        doc = json.load(f)
    runs, errors = {}, {}
    for b in doc["benchmarks"]:
        if b.get("error_occurred"):
            errors["/".join(b["name"].split("/")[:4])] = b.get("error_message", "?")
            continue
        if b.get("run_type") != "iteration":
            continue
        op, regime, impl, cols = b["name"].split("/")[:4]
        r = runs.setdefault((op, regime, impl, int(cols)),
                            {"gbs": [], "ns": [], "rows": 0, "vs": {}})
        r["gbs"].append(b["bytes_per_second"] / 1e9)
        r["ns"].append(b["ns_per_elem"])
        r["rows"] = int(b["rows"])
        for name, v in b.items():  # the harness's paired ratios (partners_of)
            if name.startswith("vs:"):
                r["vs"].setdefault(tuple(name[3:].split("/")), []).append(v)
    doc["context"]["errors"] = errors
    return doc["context"], runs


def ops_of(runs):
    """Forward and backward first, then any op added later (e.g. rms_fwd), by name."""
    seen = {k[0] for k in runs if k[1] in REGIMES}
    return [o for o in OPS if o in seen] + sorted(seen - set(OPS))


def med(r, key="gbs"):
    return statistics.median(r[key])


def impl_order(ctx, runs):
    """API first, then the forced kernels best first, the competitors, anything newer."""
    kernels = [k for k in reversed(ctx.get("ln_kernels", "").split(",")) if k]
    seen = {k[2] for k in runs}
    order = [i for i in ["api"] + kernels + COMPETITORS if i in seen]
    return order + sorted(seen - set(order) - set(ROOFS))


def header(ctx, runs):
    reps = {r: max(len(v["gbs"]) for k, v in runs.items() if k[1] == r)
            for r in ("hot", "cold", "warm", "row1") if any(k[1] == r for k in runs)}
    onednn = ctx.get("onednn", "absent")
    dnnl = (f"oneDNN {onednn}" if onednn != "absent" else
            "oneDNN: not built (libdnnl-dev not found at configure), its columns are left out")
    return (f"liblayernorm {ctx.get('ln_version', '?')} · {ctx.get('date', '?')[:10]} · "
            f"{ctx.get('cpu_model', '?')} · 1 thread · kernels: {ctx.get('ln_kernels', '?')} "
            f"(dispatched: {ctx.get('ln_dispatched', '?')}) · {dnnl} · "
            f"{ctx.get('ln_sweep', '?')} sweep, medians of "
            + ", ".join(f"{n} ({r})" for r, n in reps.items()) + " repetitions")


def fmt(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def ratio(runs, key, other):
    """The API's speed over a competitor's, as the targets judge it (paired where timed so)."""
    r = targets.speed_over(runs, key, (key[0], other))
    return f"{r:.2f}×" if r else "–"


def full_tables(ctx, runs, torch_doc=None):
    order = impl_order(ctx, runs)
    out = [header(ctx, runs), "",
           "GB/s with 8 B per element forward and 12 backward; in parentheses the % of the "
           "stream roof (ordinary stores) measured in the same run and regime (the API's: "
           "the median of each repetition's ratio, its calls alternating with the "
           "stream's, paired); stream NT = "
           "the same with non-temporal stores (cold only). API = the public entry point "
           "(dispatched kernel); kernel names = that kernel forced; ×oneDNN, ×naive = API "
           "speed over theirs (hot: paired, as the shares are; cold: the ratio of the medians).", ""]
    for op in ops_of(runs):
        op_name = OPS.get(op, op)
        for regime, rg_name in REGIMES.items():
            cols_list = sorted({k[3] for k in runs if k[0] == op and k[1] == regime})
            if not cols_list:
                continue
            # Only the lines this op and regime measured: a table per op, no empty columns.
            present = {k[2] for k in runs if k[:2] == (op, regime)}
            others = [i for i in order if i != "api" and i in present]
            nt = "stream_nt" in present
            head = ["cols", "rows", "stream"] + (["stream NT"] if nt else [])
            head += ["API (min–max)", "% stream"]
            head += ["×" + LABELS[c] for c in COMPETITORS if c in present]
            head += [LABELS.get(i, i) for i in others]
            out += [f"### {op_name}, {rg_name}", "", "| " + " | ".join(head) + " |",
                    "|" + "---|" * len(head)]
            for cols in cols_list:
                def key(impl):
                    return (op, regime, impl, cols)
                roof = runs.get(key("stream"))
                api = runs.get(key("api"))
                rows = next(runs[k]["rows"] for k in runs if k[:2] == (op, regime) and k[3] == cols)
                cells = [str(cols), str(rows), fmt(med(roof)) if roof else "–"]
                if nt:
                    r = runs.get(key("stream_nt"))
                    cells.append(fmt(med(r)) if r else "–")
                if api:
                    share = targets.speed_over(runs, key("api"), (op, "stream"))
                    cells += [f"{fmt(med(api))} ({fmt(min(api['gbs']))}–{fmt(max(api['gbs']))})",
                              f"{100 * share:.0f}%" if share else "–"]
                else:
                    cells += ["–", "–"]
                cells += [ratio(runs, key("api"), c) for c in COMPETITORS if c in present]
                for i in others:
                    r = runs.get(key(i))
                    pct = f" ({100 * med(r) / med(roof):.0f}%)" if r and roof else ""
                    cells.append(fmt(med(r)) + pct if r else "–")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    out += latency_table(runs)
    out += bf16_table(runs, torch_doc)
    out += targets.table(runs)
    if ctx["errors"]:  # a case that failed its output check has no figure, but is named
        out += ["### Errors (no figure)", ""] + [f"- `{n}`: {m}" for n, m in
                                                   sorted(ctx["errors"].items())] + [""]
    return "\n".join(out)


# bf16 against f32 through the public API, one thread ("api_1t" of the *_mt ops: the same
# path and wall clock for both), with the targets bf16 LayerNorm is held to. The issue's
# "warm" is its tensors (4096 x 768) reused: the warm regime, not the L2-resident hot one.
BF16_TARGETS = {("fwd", "cold"): 1.8, ("fwd", "warm"): 1.5, ("bwd", "cold"): 1.6}
BF16_COLS = (768, 4096)


def gelems(r):
    """G elements/s of a run (ns_per_elem inverted), median."""
    return 1.0 / med(r, "ns")


def bf16_table(runs, torch_doc):
    """bf16 vs f32 (and PyTorch's bf16 where measured), 2 threads vs 1, per cols."""
    tr = {(r["op"], r["regime"], r["cols"]): statistics.median(r["gelems"])
          for r in (torch_doc or {}).get("runs", [])}
    keys = [(d, rg, c) for d in ("fwd", "bwd") for rg in REGIMES for c in BF16_COLS
            if (f"bf16_{d}_mt", rg, "api_1t", c) in runs and (f"{d}_mt", rg, "api_1t", c) in runs]
    if not keys:
        return []
    torch_name = f"PyTorch {torch_doc['torch']} bf16" if torch_doc else None
    head = ["op", "regime", "cols", "bf16", "f32", "bf16 / f32", "target", "2 threads / 1"]
    head += [torch_name, "× PyTorch"] if torch_doc else []
    out = ["### bf16 against f32, public API, G elements/s (medians)", "",
           "One thread unless named; wall clock for both (the *_mt ops' api_1t and api lines)."
           " Ratios: medians of each repetition's ratio, calls alternating (paired)."
           + (" PyTorch: scripts/bench_torch_bf16.py, one thread, same shapes." if torch_doc
              else " PyTorch: not measured (torch not importable)."), "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, rg, c in keys:
        kb = (f"bf16_{d}_mt", rg, "api_1t", c)
        b1, f1 = gelems(runs[kb]), gelems(runs[(f"{d}_mt", rg, "api_1t", c)])
        bf = targets.elems_over(runs, kb, (f"{d}_mt", "api_1t"))
        two = targets.elems_over(runs, (f"bf16_{d}_mt", rg, "api", c), (f"bf16_{d}_mt", "api_1t"))
        target = BF16_TARGETS.get((d, rg))
        verdict = (f"≥ {target}× {'met' if bf >= target else 'missed'}" if target else "–")
        cells = [f"bf16_{d}", rg, str(c), f"{b1:.3f}", f"{f1:.3f}", f"{bf:.2f}×", verdict,
                 f"{two:.2f}×" if two else "–"]
        if torch_doc:
            t = tr.get((f"bf16_{d}", rg, c))
            cells += [f"{t:.3f}", f"{b1 / t:.1f}×"] if t else ["–", "–"]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def latency_table(runs):
    keys = sorted((k for k in runs if k[1] == "row1"), key=lambda k: (k[2], k[3]))
    if not keys:
        return []
    out = ["### One row (rows = 1, hot), forward through the public API", "",
           "| cols | ns per call (min–max) | ns per element |", "|---|---|---|"]
    for k in keys:
        calls = [ns * k[3] for ns in runs[k]["ns"]]
        out.append(f"| {k[3]} | {statistics.median(calls):.0f} ({min(calls):.0f}–"
                   f"{max(calls):.0f}) | {med(runs[k], 'ns'):.3f} |")
    return out + [""]


def summary(ctx, runs):
    """The README's table: the public API per cols, one column per direction and regime."""
    # Hot and cold: the warm regime's few cases are the bf16 table's.
    groups = [(op, rg) for op in ops_of(runs) for rg in ("hot", "cold")
              if any(k[:3] == (op, rg, "api") for k in runs)]
    cols_list = sorted({k[3] for k in runs if k[1] in REGIMES})
    dnnl = any(k[2] == "onednn" for k in runs)
    out = [header(ctx, runs), "",
           "Public API: GB/s · % of the stream roof · " + ("× oneDNN" if dnnl else "× naive")
           + " (same run, same regime).", "",
           "| cols | " + " | ".join(f"{op} {rg}" for op, rg in groups) + " |",
           "|" + "---|" * (len(groups) + 1)]
    for cols in cols_list:
        cells = [str(cols)]
        for op, rg in groups:
            k = (op, rg, "api", cols)
            if k not in runs:
                cells.append("–")
                continue
            share = targets.speed_over(runs, k, (op, "stream"))
            pct = f"{100 * share:.0f}%" if share else "–"
            cells.append(f"{fmt(med(runs[k]))} · {pct} · {ratio(runs, k, 'onednn' if dnnl else 'naive')}")
        out.append("| " + " | ".join(cells) + " |")
    lat = [k for k in runs if k[1] == "row1"]
    if lat:
        out += ["", "One row, forward: " + ", ".join(
            f"cols {k[3]}: {statistics.median(runs[k]['ns']) * k[3]:.0f} ns"
            for k in sorted(lat, key=lambda k: k[3])) + "."]
    return "\n".join(out + [""] + targets.table(runs))


def plot(ctx, runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    order = impl_order(ctx, runs)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), squeeze=False)
    ticks = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    for row, rg in enumerate(("hot", "cold")):
        for col, op in enumerate(OPS):
            ax = axes[row][col]
            for impl in ROOFS + order:
                pts = sorted((k[3], med(v)) for k, v in runs.items() if k[:3] == (op, rg, impl))
                if not pts:
                    continue
                # Tail sizes (cols not a multiple of 8, e.g. 1601) as lone markers: on the
                # line they would zigzag against their round neighbour.
                tails = [q for q in pts if q[0] % 8]
                pts = [q for q in pts if not q[0] % 8] or pts
                xs, ys = zip(*pts)
                style = dict(marker="o", markersize=3, linewidth=1.4)
                if impl in ROOFS:
                    style = dict(color="black" if impl == "stream" else "grey",
                                 linestyle="--", linewidth=2.2)
                elif impl == "api":
                    style.update(linewidth=2.6)
                elif impl not in COMPETITORS:
                    style.update(linestyle=":")
                line, = ax.plot(xs, ys, label=LABELS.get(impl, impl + " (forced)") +
                                (" (roof)" if impl in ROOFS else ""), **style)
                if tails:
                    ax.plot(*zip(*tails), linestyle="none", marker="x", markersize=7,
                            color=line.get_color())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks], fontsize=8)
            ax.set_ylim(bottom=0)
            ax.set_title(f"{OPS[op]}, {rg}")
            ax.set_xlabel("cols (× = a tail size, e.g. 1601)")
            ax.set_ylabel("GB/s (8 B/elem fwd, 12 B/elem bwd)")
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8)
    fig.suptitle(f"liblayernorm, 1 thread — {ctx.get('cpu_model', '?')}, "
                 f"{ctx.get('date', '?')[:10]}, {ctx.get('ln_sweep', '?')} sweep")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def refresh_readme(readme, block):
    with open(readme) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"report.py: {readme} lacks the markers {BEGIN} ... {END}")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(readme, "w") as f:
        f.write(head + BEGIN + "\n" + block + "\n" + END + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--image", default="docs/bench/bench.png")
    ap.add_argument("--full-table", default="docs/bench/table.md")
    ap.add_argument("--no-plot", action="store_true", help="tables only (no matplotlib)")
    ap.add_argument("--torch", help="scripts/bench_torch_bf16.py's JSON: PyTorch's bf16 figures")
    a = ap.parse_args()
    ctx, runs = load(a.json)
    if not runs:
        sys.exit("report.py: no benchmark repetitions in " + a.json)
    os.makedirs(a.out, exist_ok=True)
    torch_doc = None
    if a.torch:
        with open(a.torch) as f:
            torch_doc = json.load(f)
    table, summ = full_tables(ctx, runs, torch_doc), summary(ctx, runs)
    for name, text in (("table.md", table), ("summary.md", summ)):
        with open(os.path.join(a.out, name), "w") as f:
            f.write(text + "\n")
    if not a.no_plot:
        plot(ctx, runs, os.path.join(a.out, "bench.png"))
    print(table)
    if a.readme:
        refresh_readme(a.readme, f"{summ}\n\n![GB/s against cols]({a.image})\n\n"
                       f"Every kernel and competitor: [{a.full_table}]({a.full_table}).")


if __name__ == "__main__":
    main()
