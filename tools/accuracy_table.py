#!/usr/bin/env python3
"""The worst accuracy errors per row kind and kernel, from ctest logs, as Markdown.

    tools/accuracy_table.py LOG [LOG ...]

Each LOG is a ctest `Testing/Temporary/LastTest.log` (every suite's build directory holds
one). test_accuracy_forward and test_accuracy_backward print their worst errors per row
kind and kernel; this collects them, the worst over every log and run that names the same
kernel (SVE at several vector lengths is one kernel per length, `sve@sve256` and so on),
and prints them beside the contract's bounds (NUMERICS.md, "Accuracy targets"):

    y, rstd   x 2^-24    bound 4  (heavy-tailed `lognormal` rows: y 12, rstd 10)
    mean      x 2^-24    bound 2  (relative to |mean| + sigma)
    dx                   bound 1e-6 of the row's largest true |dx|
    dgamma, dbeta        bound 1e-6 of the vector's largest column sum of |terms|

A kernel that the host could not run prints no table (its test was skipped), so it does
not appear: the table shows what ran, nothing else.
"""
import re
import sys
from collections import defaultdict

HEADER = re.compile(r"^\d+/\d+ Test: test_accuracy_(forward|backward)\.(?:full\.)?(\S+)")
FWD_HEAD = re.compile(r"^\[ (\w+)\s*\] (layernorm|rmsnorm) worst \(x 2\^-24\)")
BWD_HEAD = re.compile(r"^\[ (\w+)\s*\] worst error \(dx per row")
ROW = re.compile(r"^\[ (\w+)\s*\]\s+([\w.+-]+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")

# worst[kernel][kind][column] = largest value seen
worst = defaultdict(lambda: defaultdict(dict))
kinds_order = []


def keep(kernel, kind, column, value):
    if kind not in kinds_order:
        kinds_order.append(kind)
    cell = worst[kernel][kind]
    cell[column] = max(cell.get(column, 0.0), value)


def scan(path):
    kernel, table = None, None
    with open(path, errors="replace") as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                kernel, table = m.group(2), None
                continue
            if kernel is None:
                continue
            m = FWD_HEAD.match(line)
            if m:
                table = "ln" if m.group(2) == "layernorm" else "rms"
                continue
            if BWD_HEAD.match(line):
                table = "bwd"
                continue
            m = ROW.match(line)
            if not (m and table):
                if not line.startswith("[ "):
                    table = None
                continue
            kind, vals = m.group(2), [float(v) for v in m.group(3, 4, 5)]
            names = {"ln": ("y", "mean", "rstd"), "rms": ("rms y", None, "rms rstd"),
                     "bwd": ("dx", "dgamma", "dbeta")}[table]
            for name, v in zip(names, vals):
                if name:
                    keep(kernel, kind, name, v)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for p in paths:
        scan(p)
    cols = ["y", "mean", "rstd", "rms y", "rms rstd", "dx", "dgamma", "dbeta"]
    fmt = {c: "{:.2f}" for c in cols[:5]}
    fmt.update({c: "{:.2g}" for c in cols[5:]})
    print("| kernel | kind | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    print("| bound | | 4 (lognormal 12) | 2 | 4 (lognormal 10) | 4 (12) | 4 (10) | 1e-6 | 1e-6 | 1e-6 |")
    for kernel in sorted(worst):
        for kind in kinds_order:
            cell = worst[kernel].get(kind)
            if not cell:
                continue
            vals = [fmt[c].format(cell[c]) if c in cell else "–" for c in cols]
            print(f"| {kernel} | {kind} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
