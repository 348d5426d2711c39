/* gelu_sve.c - GELU forward/backward with SVE (any vector length) on SLEEF's vector exp and erfc. */
#include <arm_sve.h>
#include <sleef.h>

#include "gelu.h"
#include "ln_internal.h"

static inline svfloat32_t vset(double c) { return svdup_n_f32((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): FMAX/FMIN return NaN for a NaN. */
static inline svfloat32_t clamp_lo(svbool_t pg, svfloat32_t x) { return svmax_n_f32_x(pg, x, -LN_GELU_CLAMP); }
static inline svfloat32_t clamp(svbool_t pg, svfloat32_t x) { return svmin_n_f32_x(pg, clamp_lo(pg, x), LN_GELU_CLAMP); }

/* sigmoid(w) with e = exp(-|w|) <= 1 (gelu.h); *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline svfloat32_t sigmoid(svbool_t pg, svfloat32_t w, svfloat32_t *ds)
{
    const svfloat32_t e = Sleef_expfx_u10sve(svneg_f32_x(pg, svabs_f32_x(pg, w)));
    const svfloat32_t r = svdivr_n_f32_x(pg, svadd_n_f32_x(pg, e, 1.0f), 1.0f);
    const svfloat32_t er = svmul_f32_x(pg, e, r);
    *ds = svmul_f32_x(pg, er, r);
    return svsel_f32(svcmpge_n_f32(pg, w, 0.0f), r, er);
}

static inline svfloat32_t arg_w(svbool_t pg, svfloat32_t xc, svfloat32_t x2)
{
    return svmul_f32_x(pg, svmul_f32_x(pg, vset(LN_GELU_2C), xc), svmla_f32_x(pg, svdup_n_f32(1.0f), vset(LN_GELU_K), x2));
}

static inline svfloat32_t gelu(svbool_t pg, svfloat32_t x, int kind)
{
    const svfloat32_t xc = clamp_lo(pg, x);
    if (kind == LN_GELU_ERF)
        return svmul_f32_x(pg, svmul_n_f32_x(pg, xc, 0.5f), Sleef_erfcfx_u15sve(svmul_f32_x(pg, xc, vset(-LN_GELU_RSQRT2))));
    svfloat32_t ds; /* unused here: the compiler drops it */
    return svmul_f32_x(pg, xc, sigmoid(pg, arg_w(pg, xc, svmul_f32_x(pg, xc, xc)), &ds));
}

static inline svfloat32_t gelu_grad(svbool_t pg, svfloat32_t x, int kind)
{
    const svfloat32_t xc = clamp(pg, x), x2 = svmul_f32_x(pg, xc, xc);
    if (kind == LN_GELU_ERF) {
        const svfloat32_t half_erfc = svmul_n_f32_x(pg, Sleef_erfcfx_u15sve(svmul_f32_x(pg, xc, vset(-LN_GELU_RSQRT2))), 0.5f);
        const svfloat32_t pdf = svmul_f32_x(pg, Sleef_expfx_u10sve(svmul_n_f32_x(pg, x2, -0.5f)), vset(LN_GELU_RSQRT2PI));
        return svmla_f32_x(pg, half_erfc, xc, pdf);
    }
    const svfloat32_t dw = svmul_f32_x(pg, vset(LN_GELU_2C), svmla_f32_x(pg, svdup_n_f32(1.0f), vset(3.0 * LN_GELU_K), x2));
    svfloat32_t ds;
    const svfloat32_t s = sigmoid(pg, arg_w(pg, xc, x2), &ds);
    return svmla_f32_x(pg, s, svmul_f32_x(pg, xc, dw), ds);
}

/* Predicated loads and stores: lanes past n are neither read nor written. */
static void forward_sve_gelu(const float *x, float *y, size_t n, int kind)
{
    for (size_t i = 0; i < n; i += svcntw()) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_f32(pg, y + i, gelu(pg, svld1_f32(pg, x + i), kind));
    }
}

static void backward_sve_gelu(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    for (size_t i = 0; i < n; i += svcntw()) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t g = gelu_grad(pg, svld1_f32(pg, x + i), kind);
        svst1_f32(pg, dx + i, svmul_f32_x(pg, svld1_f32(pg, dy + i), g));
    }
}

const ln_gelu_kernels ln_gelu_kernels_sve = {
    .isa = LN_ISA_SVE,
    .forward = forward_sve_gelu,
    .backward = backward_sve_gelu,
};
