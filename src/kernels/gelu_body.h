/* gelu_body.h - GELU forward and backward (tanh and erf forms) over a per-ISA vocabulary. */
#ifndef LN_KERNELS_GELU_BODY_H
#define LN_KERNELS_GELU_BODY_H

/*
 * Included by a kernel file after its vocabulary (see ln_common.h) and these:
 *   v_fms(a,b,c) = a*b-c  v_max v_min (x86 operand order: NaN in the second operand is
 *   passed on)  v_or v_xor v_andnot(a,b) = ~a & b  v_div
 *   v_select_ge0(h, a, b): a where h >= 0 (ordered), else b
 *   v_exp v_erfc: SLEEF's u10 expf and u15 erfcf of the ISA
 * The math (gelu.h) and every operation's order are those of the kernels it replaced, so
 * each ISA's bits are unchanged.
 */
#include <stddef.h>

#include "gelu.h"

#ifndef LN_INLINE
#define LN_INLINE static inline __attribute__((always_inline))
#endif

LN_INLINE V vset(double c) { return v_set1((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
LN_INLINE V clamp_lo(V x) { return v_max(v_set1(-LN_GELU_CLAMP), x); }
LN_INLINE V clamp(V x) { return v_min(v_set1(LN_GELU_CLAMP), clamp_lo(x)); }

/* w = 2u = 2C x + 2CK x^3 as hi + *lo (gelu.h): exact products by fma, one two-sum. */
LN_INLINE V arg_w(V x, V *lo)
{
    const V c1h = vset(LN_GELU_HI(LN_GELU_2C)), c1l = vset(LN_GELU_LO(LN_GELU_2C));
    const V c3h = vset(LN_GELU_HI(LN_GELU_2CK)), c3l = vset(LN_GELU_LO(LN_GELU_2CK));
    const V x2h = v_mul(x, x), x2l = v_fms(x, x, x2h);
    const V x3h = v_mul(x2h, x), x3l = v_fma(x2l, x, v_fms(x2h, x, x3h));
    const V t1h = v_mul(c1h, x), t1l = v_fma(c1l, x, v_fms(c1h, x, t1h));
    const V t3h = v_mul(c3h, x3h);
    const V t3l = v_fma(c3h, x3l, v_fma(c3l, x3h, v_fms(c3h, x3h, t3h)));
    const V hi = v_add(t1h, t3h), bv = v_sub(hi, t1h);
    const V err = v_add(v_sub(t1h, v_sub(hi, bv)), v_sub(t3h, bv));
    *lo = v_add(err, v_add(t1l, t3l));
    return hi;
}

/* sigmoid(hi + lo) with e = exp(-|w|) <= 1 (gelu.h), e = exp(-|hi|) (1 -+ lo);
 *ds = sigmoid (1 - sigmoid) = e r^2. */
LN_INLINE V sigmoid(V hi, V lo, V *ds)
{
    const V sign = v_set1(-0.0f);
    const V e0 = v_exp(v_or(hi, sign));
    const V e = v_fma(e0, v_xor(lo, v_andnot(hi, sign)), e0);
    const V r = v_div(v_set1(1.0f), v_add(v_set1(1.0f), e));
    *ds = v_mul(v_mul(e, r), r);
    return v_select_ge0(hi, r, v_mul(e, r));
}

/* 0.5 erfc(-x / sqrt 2) with z = hi + lo, and e = exp(-x^2 / 2) = exp(-z^2) (1 -+ ...),
   which the backward's pdf shares. */
LN_INLINE V half_erfc(V x, V *e)
{
    const V rh = vset(-LN_GELU_HI(LN_GELU_RSQRT2)), rl = vset(-LN_GELU_LO(LN_GELU_RSQRT2));
    const V zh = v_mul(x, rh), zl = v_fma(x, rl, v_fms(x, rh, zh));
    const V x2h = v_mul(x, x), x2l = v_fms(x, x, x2h);
    const V e0 = v_exp(v_mul(v_set1(-0.5f), x2h));
    *e = v_fnma(v_mul(v_set1(0.5f), x2l), e0, e0);
    const V corr = v_mul(v_mul(zl, vset(LN_GELU_2RSQRTPI)), *e);
    return v_mul(v_set1(0.5f), v_sub(v_erfc(zh), corr));
}

/* The argument uses x clamped to [-20, 20] (no Inf - Inf in the float-float parts); the
   factor x only below, so f(+Inf) = +Inf. */
LN_INLINE V gelu(V x, int kind)
{
    const V xa = clamp(x), xc = clamp_lo(x);
    if (kind == LN_GELU_ERF) {
        V e;
        return v_mul(xc, half_erfc(xa, &e));
    }
    V lo, ds; /* ds unused here: the compiler drops it */
    const V hi = arg_w(xa, &lo);
    return v_mul(xc, sigmoid(hi, lo, &ds));
}

LN_INLINE V gelu_grad(V x, int kind)
{
    const V xa = clamp(x);
    if (kind == LN_GELU_ERF) {
        V e;
        const V h = half_erfc(xa, &e);
        return v_fma(xa, v_mul(e, vset(LN_GELU_RSQRT2PI)), h);
    }
    const V x2 = v_mul(xa, xa);
    const V dw = v_mul(
        vset(LN_GELU_2C), v_fma(vset(3.0 * LN_GELU_K), x2, v_set1(1.0f)));
    V lo, ds;
    const V hi = arg_w(xa, &lo);
    const V s = sigmoid(hi, lo, &ds);
    return v_fma(v_mul(xa, dw), ds, s);
}

static void gelu_forward(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + LN_W <= n; i += LN_W)
        v_store(y + i, gelu(v_load(x + i), kind));
    if (i < n) {
        const VM k = v_tailmask((unsigned)(n - i));
        v_storem(y + i, k, gelu(v_loadm(x + i, k), kind));
    }
}

static void gelu_backward(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + LN_W <= n; i += LN_W)
        v_store(dx + i, v_mul(v_load(dy + i), gelu_grad(v_load(x + i), kind)));
    if (i < n) {
        const VM k = v_tailmask((unsigned)(n - i));
        const V g = gelu_grad(v_loadm(x + i, k), kind);
        v_storem(dx + i, k, v_mul(v_loadm(dy + i, k), g));
    }
}

#endif /* LN_KERNELS_GELU_BODY_H */
