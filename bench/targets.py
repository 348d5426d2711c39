"""targets.py - the speed targets the project holds itself to, judged on one sweep's medians
(ratios: the medians of the harness's paired ratios, see speed_over).

Each target names the figure it is judged by: the worst case over the cols it covers
(with those cols), so "met" means met at every one of them. Used by report.py, which
prints the table and puts it in the README beside the sweep it comes from.
"""
import statistics

def _ns(r):
    """Median nanoseconds per element of a run."""
    return statistics.median(r["ns"])


def bpe(r):
    """Bytes per element of a run: GB/s times ns per element."""
    return r["gbs"][0] * r["ns"][0]


def _partner(runs, key, other):
    """The run of `other` (op, impl) at `key`'s regime and cols, or None."""
    return runs.get((other[0], key[1], other[1], key[3]))


def elems_over(runs, key, other):
    """Elements per second of run `key` over those of `other` (op, impl) at the same regime
    and cols: the median of the repetitions' paired ratios where the harness timed the two
    alternating (bench/harness.cc, partners_of), else the ratio of the medians. None when
    either is missing."""
    a, b = runs.get(key), _partner(runs, key, other)
    if not a or not b:
        return None
    paired = a.get("vs", {}).get(tuple(other))
    if paired:
        return statistics.median(paired)
    return _ns(b) / _ns(a)


def speed_over(runs, key, other):
    """GB/s of `key` over `other`'s: elems_over times the runs' bytes per element."""
    r = elems_over(runs, key, other)
    if r is None:
        return None
    return r * bpe(runs[key]) / bpe(_partner(runs, key, other))


def _cols(runs, op, regime, impl="api"):
    return sorted(k[3] for k in runs if k[:3] == (op, regime, impl))


def _in(cols, lo, hi, inside=True):
    return [c for c in cols if (lo <= c <= hi) == inside]


def _worst(values):
    """(value, cols) of the smallest value; None when there is nothing to judge."""
    return min(values, key=lambda v: v[0]) if values else None


def _pct_stream(runs, op, regime, cols, roof="stream"):
    out = []
    for c in cols:
        r = speed_over(runs, (op, regime, "api", c), (op, roof))
        if r is not None:
            out.append((100 * r, c))
    return out


def _over(runs, op, regime, other, cols, other_op=None, impl="api"):
    """API speed over `other` (an impl of the same op, or impl `other` of other_op)."""
    out = []
    for c in cols:
        r = speed_over(runs, (op, regime, impl, c), (other_op, impl) if other_op else (op, other))
        if r is not None:
            out.append((r, c))
    return out


def _row(issue, what, worst, goal, unit, fmt="{:.2f}"):
    if worst is None:
        return [issue, what, "not measured", "–"]
    v, c = worst
    return [issue, what, f"{fmt.format(v)}{unit} (cols {c})", "met" if v >= goal else "missed"]


def targets(runs):
    """Rows: issue, target, worst figure (cols), verdict."""
    rows = []
    f32 = "f32 #15"
    # (what, op, regime, cols range or None for every cols, outside the range?, goal)
    shares = [("forward hot ≥ 70 % of copy, 256–4096 cols", "fwd", "hot", (256, 4096), False, 70),
              ("forward hot ≥ 50 % of copy, other cols", "fwd", "hot", (256, 4096), True, 50),
              ("backward hot ≥ 60 % of dx = dy + x, 128–4096 cols", "bwd", "hot", (128, 4096),
               False, 60),
              ("backward hot ≥ 45 % of dx = dy + x, other cols", "bwd", "hot", (128, 4096), True,
               45),
              ("forward cold ≥ 110 % of the plain copy", "fwd", "cold", None, False, 110),
              ("backward cold ≥ 95 % of the plain dx = dy + x", "bwd", "cold", None, False, 95)]
    for what, op, rg, rng, outside, goal in shares:
        cols = _cols(runs, op, rg)
        if rng:
            cols = _in(cols, rng[0], rng[1], not outside)
        rows.append(_row(f32, what, _worst(_pct_stream(runs, op, rg, cols)), goal, " %", "{:.0f}"))
    for what, op, other, goal in (("forward hot ≥ 1.5× oneDNN", "fwd", "onednn", 1.5),
                                  ("backward hot ≥ 1.3× naive (-ffast-math)", "bwd", "naive", 1.3),
                                  ("backward hot ≥ 2× oneDNN", "bwd", "onednn", 2.0)):
        rows.append(_row(f32, what, _worst(_over(runs, op, "hot", other, _cols(runs, op, "hot"))),
                         goal, "×"))
    for op, name in (("rms_bwd", "RMSNorm"), ("acc_bwd", "ACCUMULATE")):
        for rg in ("hot", "cold"):
            rows.append(_row(f32, f"{name} backward {rg} ≥ 0.9× plain backward",
                             _worst(_over(runs, op, rg, None, _cols(runs, op, rg), "bwd")),
                             0.9, "×"))
    lat = runs.get(("fwd", "row1", "api", 768))
    if lat:
        ns = _ns(lat) * 768
        rows.append([f32, "one row of 768, forward ≤ 150 ns", f"{ns:.0f} ns",
                     "met" if ns <= 150 else "missed"])
    for op in ("fwd", "bwd"):
        for rg in ("hot", "cold"):
            a, b = runs.get((op, rg, "api", 1601)), runs.get((op, rg, "api", 1600))
            paired = (a or {}).get("vs", {}).get((op, "api@1600"))
            if paired:  # elements/s of 1601 over 1600, the two alternating (harness.cc)
                r = 1.0 / statistics.median(paired)
            elif a and b:
                r = _ns(a) / _ns(b)
            else:
                continue
            rows.append([f32, f"{op} {rg}: 1601 cols ≤ 1.1× the per-element time of 1600",
                         f"{r:.2f}×", "met" if r <= 1.1 else "missed"])
    g = "GELU #16"
    for op in ("gelu_tanh", "gelu_erf", "gelu_tanh_bwd", "gelu_erf_bwd"):
        rows.append(_row(g, f"{op} hot ≥ 1.3× oneDNN",
                         _worst(_over(runs, op, "hot", "onednn", _cols(runs, op, "hot"))), 1.3, "×"))
    for op in ("gelu_tanh", "gelu_erf", "gelu_tanh_bwd", "gelu_erf_bwd"):
        roof = "copy" if "bwd" not in op else "3-stream"
        rows.append(_row(g, f"{op} cold ≥ 80 % of the {roof} roof",
                         _worst(_pct_stream(runs, op, "cold", _cols(runs, op, "cold"))), 80, " %",
                         "{:.0f}"))
    return rows


def bf16_targets(runs):
    """bf16 against f32 through the API (one thread, wall clock) and 2 threads against one."""
    rows, b = [], "bf16 #17"
    goals = {("fwd", "cold"): 1.8, ("fwd", "warm"): 1.5, ("bwd", "cold"): 1.6}
    for (d, rg), goal in goals.items():
        vals = []
        for c in (768, 4096):
            r = elems_over(runs, (f"bf16_{d}_mt", rg, "api_1t", c), (f"{d}_mt", "api_1t"))
            if r is not None:
                vals.append((r, c))
        rows.append(_row(b, f"bf16 {d} {rg} ≥ {goal}× f32 elements/s", _worst(vals), goal, "×"))
    vals = []
    for d in ("fwd", "bwd"):
        for c in (768, 4096):
            r = elems_over(runs, (f"bf16_{d}_mt", "cold", "api", c), (f"bf16_{d}_mt", "api_1t"))
            if r is not None:
                vals.append((r, c))
    rows.append(_row(b, "bf16 2 threads ≥ 1.6× one (cold, forward and backward)", _worst(vals),
                     1.6, "×"))
    return rows


def table(runs):
    rows = targets(runs) + bf16_targets(runs)
    rows = [r for r in rows if r[2] != "not measured"]
    if not rows:
        return []
    met = sum(r[3] == "met" for r in rows)
    out = [f"### Speed targets: {met} of {len(rows)} met in this sweep", "",
           "Public API, medians of this run; the figure is the worst over the cols the "
           "target covers. Ratios are paired: the median of "
           "each repetition's ratio, the two calls alternating (hot: in batches of about "
           "a millisecond). GELU's peer is oneDNN "
           "(PyTorch's GELU is not in the harness).", "",
           "| issue | target | worst figure | verdict |", "|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]
