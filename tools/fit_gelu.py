#!/usr/bin/python3
"""fit_gelu.py - derives the GELU kernels' polynomial exp and the erf form's rational erfcx.

It also prints the constants of the tanh form's exp reduction (exp_av), which are derived,
not fitted.

exp (both forms): exp(r) = 1 + r + r^2 U(r) on |r| <= ln2 / 2 (after Cody-Waite reduction
by n ln 2), U of degree 4 fitted for relative error, so the Horner ends in two fma with
the exact constants 1: the float evaluation's error is the last rounding plus ~0.1 ulp.


GELU's erf form needs q = 0.5 erfc(t) for t = |x| / sqrt 2 in [0, 20 / sqrt 2]. The kernels
write erfc(t) = exp(-t^2) R(t), R = erfcx, and take exp(-t^2) from the exactly split t^2
(gelu_body.h), so only R is approximated here. R is written through the continued-fraction
shape R = c / (t + g(t)), c = 1 / sqrt(pi), g -> 1 / (2t) for large t, with g = P / Q a
rational fit (Q(0) = 1); the kernels evaluate

    R(t) = Q(t) / (t' Q(t) + P'(t)),   t' = sqrt(pi) t,  P' = sqrt(pi) P    (one division)

The kernels evaluate P' and Q at a = |x| = sqrt(2) t itself (exact, where t is not): the
printed coefficients are the fit's, k-th scaled by 2^(-k/2) before rounding to float, so
P'(0) = Q(0) = 1 stay exact. t' is a sqrt(pi/2) (the kernels keep it in two floats). A rounding in Q cancels between
numerator and denominator, and an error in P' (that is in g) reaches R damped by
g / (t + g): ~1 at t = 0, ~1 / (2 t^2) in the tail.

The fit is a linearised weighted least-squares (Loeb / Lawson iteration) of g on Chebyshev
nodes, weighted by 1 / (t + g) so it minimises R's relative error; the reference is mpmath
at 40 digits. The coefficients are then rounded to float, and R is evaluated in simulated
float32 (every fma rounds once: products are exact in double, the sum rounded to float;
the double rounding this can add is a 2^-29 event) on 200001 points a of [0, 20] and
compared with mpmath, printing the error in float ulps of R. Output: the C constants.

Run: /usr/bin/python3 tools/fit_gelu.py   (needs numpy and mpmath; ~1 minute)
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
T = 20 / np.sqrt(2)  # the kernels clamp |x| to 20
DEG = 4  # P of degree 4, Q of degree 5: 2^-30 fit error, far below float's rounding


def erfcx(t):
    t = mp.mpf(float(t))
    return mp.exp(t * t) * mp.erfc(t)


def fit(n, nodes=1500, iters=40):
    k = np.arange(nodes)
    t = T / 2 + T / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    g = np.array([float(1 / (mp.sqrt(mp.pi) * erfcx(x)) - mp.mpf(float(x))) for x in t])
    wt = 1 / (t + g)  # relative error of R per absolute error of g
    q = np.ones(nodes)
    w = np.ones(nodes)
    best = None
    for i in range(iters):
        # P - g (Q - 1) = g with Q(0) = 1: linear in the coefficients; divide by the
        # previous Q (Loeb) so the residual approximates P / Q - g.
        a = np.hstack([np.vander(t, n + 1, increasing=True),
                       -g[:, None] * np.vander(t, n + 2, increasing=True)[:, 1:]])
        ws = w * wt / q
        c, *_ = np.linalg.lstsq(a * ws[:, None], g * ws, rcond=None)
        p_ = np.polyval(c[:n + 1][::-1], t)
        q = 1 + t * np.polyval(c[n + 1:][::-1], t)
        err = np.abs(p_ / q - g) * wt
        if best is None or err.max() < best[1]:
            best = (c.copy(), err.max())
        if i > 8:  # Lawson: lean the weights toward the worst nodes
            w = w * np.sqrt(err)
            w /= w.mean()
    return best


def fit_exp(nodes=2000, iters=30):
    half = float(mp.log(2) / 2) * 1.0005  # a hair beyond ln2/2: the rounding of r
    r = half * np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    u = np.array([float((mp.exp(mp.mpf(v)) - 1 - mp.mpf(v)) / mp.mpf(v) ** 2) for v in r])
    ex = np.array([float(mp.exp(mp.mpf(v))) for v in r])
    a = np.vander(r, 5, increasing=True)
    w = np.ones(nodes)
    for _ in range(iters):
        ws = w * r ** 2 / ex  # the relative error of exp per error in U
        c, *_ = np.linalg.lstsq(a * ws[:, None], u * ws, rcond=None)
        err = (a @ c - u) * r ** 2 / ex
        w = w * np.sqrt(np.abs(err) + 1e-30)
        w /= w.mean()
    return c, np.abs(err).max()


def fma32(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def horner32(coef, t):
    acc = np.full_like(t, coef[-1])
    for a in coef[-2::-1]:
        acc = fma32(acc, t, np.full_like(t, a))
    return acc


def ulp32(v):
    return 2.0 ** (np.floor(np.log2(np.abs(v))) - 23)


def hexf(v):
    mant, exp = float(np.float32(v)).hex().split("p")
    return mant.rstrip("0").rstrip(".") + "p" + exp + "f"


def exp_av_constants():
    """The tanh form's exp(A v) reduction in v's units (gelu_math.h, exp_av): A = 2C,
    M = ln2 / A cut to 14 significant bits (Mh: n Mh exact for |n| < 2^8), A (M - Mh)."""
    a = 2 * mp.sqrt(2 / mp.pi)
    m = mp.log(2) / a
    e = int(mp.floor(mp.log(m, 2)))
    mh = mp.nint(m * mp.mpf(2) ** (13 - e)) / mp.mpf(2) ** (13 - e)
    print(f"#define LN_EXPV_A_LN2 {hexf(float(a / mp.log(2)))} /* A / ln2 */")
    print(f"#define LN_EXPV_MH {hexf(float(mh))} /* ln2 / A to 14 bits */")
    print(f"#define LN_EXPV_AML {hexf(float(a * (m - mh)))} /* A (ln2 / A - Mh) */")


def main():
    u, exp_err = fit_exp()
    r = np.linspace(-0.3466, 0.3466, 100001).astype(np.float32)
    acc = horner32([np.float32(v) for v in u], r)
    one = np.ones_like(r)
    p = fma32(fma32(acc, r, one), r, one)
    exact = np.array([float(mp.exp(mp.mpf(float(v)))) for v in r[::10]])
    eu = np.abs(p[::10] - exact) / ulp32(exact)
    print(f"/* exp: fit error 2^{np.log2(exp_err):.1f} relative; float evaluation max "
          f"{eu.max():.2f} ulp on |r| <= ln2/2 */")
    print("#define LN_EXP_U " + ", ".join(hexf(v) for v in u) + " /* r^0 up */")
    exp_av_constants()
    c, fit_err = fit(DEG)
    sp = mp.sqrt(mp.pi)
    # In a = sqrt(2) t: the k-th coefficient times 2^(-k/2), rounded to float once.
    sc = [mp.mpf(2) ** (-mp.mpf(k) / 2) for k in range(DEG + 2)]
    pstar = [np.float32(float(sp * mp.mpf(v) * sc[k])) for k, v in enumerate(c[:DEG + 1])]
    qstar = [np.float32(1.0)] + [np.float32(float(mp.mpf(v) * sc[k + 1]))
                                 for k, v in enumerate(c[DEG + 1:])]
    a = np.linspace(0, 20, 200001).astype(np.float32)
    exact = np.array([float(erfcx(float(x) / np.sqrt(2))) for x in a])
    qv = horner32(qstar, a)
    tp = (a.astype(np.float64) * float(sp / mp.sqrt(2))).astype(np.float32)
    d = fma32(tp, qv, horner32(pstar, a))
    r = (qv.astype(np.float64) / d.astype(np.float64)).astype(np.float32)
    ulps = np.abs(r - exact) / ulp32(exact)
    # As the kernels evaluate it: P - 1 by Horner (its roundings scale with a, not with
    # P ~ 1), dt = sqrt(pi/2) a Q + P - 1 in two fma (sqrt(pi/2) a in two floats), the
    # denominator 1 + dt kept exactly, and the quotient's remainder added: R carries the
    # Horner roundings, dt's one rounding (dt / (1 + dt) of 2^-24 relative), then one
    # rounding (here, of the double quotient).
    c2 = float(sp / mp.sqrt(2))
    tph = (a.astype(np.float64) * c2).astype(np.float32)
    tpl = (a.astype(np.float64) * c2 - tph.astype(np.float64)).astype(np.float32)
    pm1 = (horner32(pstar[1:], a).astype(np.float64) * a).astype(np.float32)
    dt = fma32(tph, qv, fma32(tpl, qv, pm1))
    rk = (qv.astype(np.float64) / (1.0 + dt.astype(np.float64))).astype(np.float32)
    ulps_k = np.abs(rk - exact) / ulp32(exact)
    print(f"/* fit: max relative error of R in exact arithmetic {fit_err:.3g} "
          f"(2^{np.log2(fit_err):.1f}); float evaluation: max {ulps.max():.2f} ulp "
          f"(at a = {a[np.argmax(ulps)]:.4g}), 99.9% below {np.percentile(ulps, 99.9):.2f}; "
          f"as the kernels evaluate it (1 + dt exactly, the remainder kept) max "
          f"{ulps_k.max():.2f} ulp */")
    for name, coef in (("P", pstar), ("Q", qstar)):
        body = ", ".join(hexf(v) for v in coef)
        print(f"#define LN_ERFCX_{name} {body} /* a^0 up */")
    return 0


if __name__ == "__main__":
    sys.exit(main())
