/* gelu_sve.c - GELU forward/backward with SVE (any vector length) on SLEEF's vector exp and erfc.
 */
#include <arm_sve.h>
#include <sleef.h>

#include "gelu.h"
#include "ln_internal.h"

static inline svfloat32_t vset(double c) { return svdup_n_f32((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): FMAX/FMIN return NaN for a NaN. */
static inline svfloat32_t clamp_lo(svbool_t pg, svfloat32_t x)
{
    return svmax_n_f32_x(pg, x, -LN_GELU_CLAMP);
}
static inline svfloat32_t clamp(svbool_t pg, svfloat32_t x)
{
    return svmin_n_f32_x(pg, clamp_lo(pg, x), LN_GELU_CLAMP);
}

/* a b - c, the rounding error of a product when c is its rounded value */
static inline svfloat32_t fms(svbool_t pg, svfloat32_t a, svfloat32_t b, svfloat32_t c)
{
    return svnmls_f32_x(pg, c, a, b);
}

/* w = 2u = 2C x + 2CK x^3 as hi + *lo (gelu.h): exact products by fma, one two-sum. */
static inline svfloat32_t arg_w(svbool_t pg, svfloat32_t x, svfloat32_t *lo)
{
    const svfloat32_t c1h = vset(LN_GELU_HI(LN_GELU_2C)), c1l = vset(LN_GELU_LO(LN_GELU_2C));
    const svfloat32_t c3h = vset(LN_GELU_HI(LN_GELU_2CK)), c3l = vset(LN_GELU_LO(LN_GELU_2CK));
    const svfloat32_t x2h = svmul_f32_x(pg, x, x), x2l = fms(pg, x, x, x2h);
    const svfloat32_t x3h = svmul_f32_x(pg, x2h, x),
                      x3l = svmla_f32_x(pg, fms(pg, x2h, x, x3h), x2l, x);
    const svfloat32_t t1h = svmul_f32_x(pg, c1h, x),
                      t1l = svmla_f32_x(pg, fms(pg, c1h, x, t1h), c1l, x);
    const svfloat32_t t3h = svmul_f32_x(pg, c3h, x3h);
    const svfloat32_t t3l =
        svmla_f32_x(pg, svmla_f32_x(pg, fms(pg, c3h, x3h, t3h), c3l, x3h), c3h, x3l);
    const svfloat32_t hi = svadd_f32_x(pg, t1h, t3h), bv = svsub_f32_x(pg, hi, t1h);
    const svfloat32_t err =
        svadd_f32_x(pg, svsub_f32_x(pg, t1h, svsub_f32_x(pg, hi, bv)), svsub_f32_x(pg, t3h, bv));
    *lo = svadd_f32_x(pg, err, svadd_f32_x(pg, t1l, t3l));
    return hi;
}

/* sigmoid(hi + lo) with e = exp(-|w|) <= 1 (gelu.h), e = exp(-|hi|) (1 -+ lo);
 *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline svfloat32_t sigmoid(svbool_t pg, svfloat32_t hi, svfloat32_t lo, svfloat32_t *ds)
{
    const svbool_t pos = svcmpge_n_f32(pg, hi, 0.0f);
    const svfloat32_t e0 = Sleef_expfx_u10sve(svneg_f32_x(pg, svabs_f32_x(pg, hi)));
    const svfloat32_t e = svmla_f32_x(pg, e0, e0, svsel_f32(pos, svneg_f32_x(pg, lo), lo));
    const svfloat32_t r = svdivr_n_f32_x(pg, svadd_n_f32_x(pg, e, 1.0f), 1.0f);
    const svfloat32_t er = svmul_f32_x(pg, e, r);
    *ds = svmul_f32_x(pg, er, r);
    return svsel_f32(pos, r, er);
}

/* 0.5 erfc(-x / sqrt 2) with z = hi + lo, and e = exp(-x^2 / 2) = exp(-z^2) (1 -+ ...),
   which the backward's pdf shares. */
static inline svfloat32_t half_erfc(svbool_t pg, svfloat32_t x, svfloat32_t *e)
{
    const svfloat32_t rh = vset(-LN_GELU_HI(LN_GELU_RSQRT2)),
                      rl = vset(-LN_GELU_LO(LN_GELU_RSQRT2));
    const svfloat32_t zh = svmul_f32_x(pg, x, rh), zl = svmla_f32_x(pg, fms(pg, x, rh, zh), x, rl);
    const svfloat32_t x2h = svmul_f32_x(pg, x, x), x2l = fms(pg, x, x, x2h);
    const svfloat32_t e0 = Sleef_expfx_u10sve(svmul_n_f32_x(pg, x2h, -0.5f));
    *e = svmls_f32_x(pg, e0, svmul_n_f32_x(pg, x2l, 0.5f), e0);
    const svfloat32_t corr = svmul_f32_x(pg, svmul_f32_x(pg, zl, vset(LN_GELU_2RSQRTPI)), *e);
    return svmul_n_f32_x(pg, svsub_f32_x(pg, Sleef_erfcfx_u15sve(zh), corr), 0.5f);
}

/* The argument uses x clamped to [-20, 20] (no Inf - Inf in the float-float parts); the
   factor x only below, so f(+Inf) = +Inf. */
static inline svfloat32_t gelu(svbool_t pg, svfloat32_t x, int kind)
{
    const svfloat32_t xa = clamp(pg, x), xc = clamp_lo(pg, x);
    if (kind == LN_GELU_ERF) {
        svfloat32_t e;
        return svmul_f32_x(pg, xc, half_erfc(pg, xa, &e));
    }
    svfloat32_t lo, ds; /* ds unused here: the compiler drops it */
    const svfloat32_t hi = arg_w(pg, xa, &lo);
    return svmul_f32_x(pg, xc, sigmoid(pg, hi, lo, &ds));
}

static inline svfloat32_t gelu_grad(svbool_t pg, svfloat32_t x, int kind)
{
    const svfloat32_t xa = clamp(pg, x);
    if (kind == LN_GELU_ERF) {
        svfloat32_t e;
        const svfloat32_t h = half_erfc(pg, xa, &e);
        return svmla_f32_x(pg, h, xa, svmul_f32_x(pg, e, vset(LN_GELU_RSQRT2PI)));
    }
    const svfloat32_t x2 = svmul_f32_x(pg, xa, xa);
    const svfloat32_t dw = svmul_f32_x(
        pg, vset(LN_GELU_2C), svmla_f32_x(pg, svdup_n_f32(1.0f), vset(3.0 * LN_GELU_K), x2));
    svfloat32_t lo, ds;
    const svfloat32_t hi = arg_w(pg, xa, &lo);
    const svfloat32_t s = sigmoid(pg, hi, lo, &ds);
    return svmla_f32_x(pg, s, svmul_f32_x(pg, xa, dw), ds);
}

/* Predicated loads and stores: lanes past n are neither read nor written. */
void ln_gelu_forward_sve(const float *x, float *y, size_t n, int kind)
{
    for (size_t i = 0; i < n; i += svcntw()) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_f32(pg, y + i, gelu(pg, svld1_f32(pg, x + i), kind));
    }
}

void ln_gelu_backward_sve(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    for (size_t i = 0; i < n; i += svcntw()) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t g = gelu_grad(pg, svld1_f32(pg, x + i), kind);
        svst1_f32(pg, dx + i, svmul_f32_x(pg, svld1_f32(pg, dy + i), g));
    }
}
