#!/usr/bin/env python3
"""Heavy-tailed rows through the public forward, against long-double truth.

    tools/heavy_tail_sweep.py LIB [ISA [SEEDS]]

LIB is a built liblayernorm.so, called through the project's own binding (python/layernorm,
LAYERNORM_LIBRARY=LIB); ISA caps the kernel (scalar, avx2, avx512, ...; default: the best
this machine runs); SEEDS defaults to 2.
Rows of five heavy-tailed kinds (lognormal exp(N(0, 4)) and exp(N(0, 9)), Pareto 1.5 + 1,
Cauchy, Student-t with 2 degrees of freedom) at 16 to 30001 columns, with gamma ~ 1 +
0.1 N(0,1) and beta ~ 0.1 N(0,1), ~600 000 values per kind, columns and seed. Prints the
worst error per kind in units of 2^-24, measured as the tests measure it:

    y     max|y - t| / (1 + |gamma xhat| + |beta|)     contract for these rows: 12
    mean  |m - t| / (|t| + sigma)                       2
    rstd  |r / t - 1|                                   10

These are not the tests' rows (tests/rowkinds.c draws its own lognormal kind with gamma 1
and beta 0): it is the independent check the README's "Heavy tails" figures come from.
numpy's long double is 80-bit on x86-64, enough for truth of float inputs.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

KINDS = ("lognormal2", "lognormal3", "pareto1.5", "cauchy", "student2")
COLS = (16, 31, 64, 100, 128, 256, 511, 768, 1024, 1600, 2048, 4096, 8192, 16384, 30001)
U = 2.0 ** -24
LD = np.longdouble


def draw(rng, kind, shape):
    if kind == "lognormal2":
        return np.exp(rng.normal(0, 2, size=shape))
    if kind == "lognormal3":
        return np.exp(rng.normal(0, 3, size=shape))
    if kind == "pareto1.5":
        return rng.pareto(1.5, size=shape) + 1
    if kind == "cauchy":
        return rng.standard_cauchy(size=shape)
    return rng.standard_t(2, size=shape)


def errors(ln, rng, kind, cols):
    """Worst (y, mean, rstd) errors of one batch, in units of 2^-24."""
    x = draw(rng, kind, (max(16, 600000 // cols), cols)).astype(np.float32)
    x = np.ascontiguousarray(x[np.isfinite(x).all(axis=1)])  # exp(N(0, 9)) can overflow float
    g = (1 + 0.1 * rng.normal(size=cols)).astype(np.float32)
    b = (0.1 * rng.normal(size=cols)).astype(np.float32)
    y, m, r = ln.forward(x, g, b, 1e-5)
    xl = x.astype(LD)
    mt = xl.mean(axis=1)
    d = xl - mt[:, None]
    vt = (d * d).mean(axis=1)
    rt = 1 / np.sqrt(vt + LD(np.float32(1e-5)))
    xhat = d * rt[:, None]
    gl, bl = g.astype(LD), b.astype(LD)
    ey = np.abs(y.astype(LD) - (xhat * gl + bl)) / (1 + np.abs(gl * xhat) + np.abs(bl))
    em = np.abs(m.astype(LD) - mt) / (np.abs(mt) + np.sqrt(vt))
    er = np.abs(r.astype(LD) / rt - 1)
    return float(ey.max() / U), float(em.max() / U), float(er.max() / U)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    os.environ["LAYERNORM_LIBRARY"] = sys.argv[1]
    import layernorm as ln  # after the variable: the binding loads the library on import

    if len(sys.argv) > 2:
        ln.set_max_isa(sys.argv[2])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    print(f"kernel {ln.get_isa()}, {seeds} seeds, units of 2^-24")
    worst = {k: [(0.0, 0), (0.0, 0), (0.0, 0)] for k in KINDS}
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        for kind in KINDS:
            for cols in COLS:
                for q, e in enumerate(errors(ln, rng, kind, cols)):
                    if e > worst[kind][q][0]:
                        worst[kind][q] = (e, cols)
    print("| kind | y (cols) | mean (cols) | rstd (cols) |\n|---|---|---|---|")
    for kind, w in worst.items():
        print(f"| {kind} | " + " | ".join(f"{e:.2f} ({c})" for e, c in w) + " |")


if __name__ == "__main__":
    main()
