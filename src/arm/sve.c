/* sve.c - SVE kernels, vector-length agnostic: Welford statistics, centered apply and backward. */
#include <arm_sve.h>

#include "arm/sve_stats.h"
#include "ln_internal.h"

#define LN_AI static inline __attribute__((always_inline))

/* The value normalized in the lanes of pg from column i: x, or s = x + res, stored to sum
   when asked. */
LN_AI svfloat32_t src_v(svbool_t pg, const float *x, const float *res, float *sum, size_t i,
                        int hres, int hsum)
{
    return ln_sve_src(pg, x, res, sum, i, 0, hres, hsum);
}

/* RMSNorm's statistics: the mean square (two accumulators, the tail predicated into the
   first), summed in pieces of LN_RECENTER iterations whose sum is compensated (as the
   shared bodies' row_ms: squares of one size round coherently), then FADDV; mean is 0,
   so the shared apply computes x * (rstd * gamma) + beta. A sum out of the float range
   (|x| above ~1e19/sqrt(n) or below ~1e-15) is redone in double. */
LN_AI void row_ms(const float *x, const float *res, float *sum, size_t n, float eps,
                  float *mean, float *dmean, float *rstd, int hres, int hsum)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw();
    const svfloat32_t zero = svdup_n_f32(0.0f);
    svfloat32_t s0 = zero, s1 = zero, so0 = zero, so1 = zero, c0 = zero, c1 = zero;
    size_t i = 0, it = 0;
    for (; i + 2 * vl <= n; i += 2 * vl, it++) {
        const svfloat32_t v0 = src_v(pt, x, res, sum, i, hres, hsum);
        const svfloat32_t v1 = src_v(pt, x, res, sum, i + vl, hres, hsum);
        s0 = svmla_f32_x(pt, s0, v0, v0);
        s1 = svmla_f32_x(pt, s1, v1, v1);
        if (it % LN_RECENTER == LN_RECENTER - 1) {
            /* Kahan: the pieces' sum keeps its lost low part in c. */
            svfloat32_t y = svsub_f32_x(pt, s0, c0), t = svadd_f32_x(pt, so0, y);
            c0 = svsub_f32_x(pt, svsub_f32_x(pt, t, so0), y);
            so0 = t;
            y = svsub_f32_x(pt, s1, c1), t = svadd_f32_x(pt, so1, y);
            c1 = svsub_f32_x(pt, svsub_f32_x(pt, t, so1), y);
            so1 = t;
            s0 = s1 = zero;
        }
    }
    for (; i < n; i += vl) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t v = src_v(pg, x, res, sum, i, hres, hsum);
        s0 = svmla_f32_m(pg, s0, v, v);
    }
    s0 = svadd_f32_x(pt, so0, svsub_f32_x(pt, s0, c0));
    s1 = svadd_f32_x(pt, so1, svsub_f32_x(pt, s1, c1));
    const float ss = svaddv_f32(pt, svadd_f32_x(pt, s0, s1));
    *mean = *dmean = 0.0f;
    *rstd = (float)(1.0 / sqrt((double)ss / (double)n + (double)eps));
    if (ln_stats_out_of_range(ss, n, eps))
        ln_rescue_row(ln_sve_get_f32, hsum ? sum : x, hres && !hsum ? res : NULL, n, 1, eps,
                      mean, dmean, rstd);
}

/* One row's statistics in one pass (storing s = x + res on the way when asked). */
LN_AI void row_stats(const float *x, const float *res, float *sum, size_t n, float eps,
                     const ln_sve_plan *plan, float *mean, float *dmean, float *rstd, int rms,
                     int hres, int hsum)
{
    if (rms)
        row_ms(x, res, sum, n, eps, mean, dmean, rstd, hres, hsum);
    else
        ln_sve_row_stats_c(plan, x, res, sum, eps, mean, dmean, rstd, 0, hres, hsum);
}

/* y = ((v - mean) - dmean) * (rstd * gamma) + beta (RMSNorm: mean = dmean = 0), v = src
   (+ res when hadd: the residual sum was not stored, so it is formed again, with the
   same single rounding). */
LN_AI svfloat32_t apply_v(svbool_t pg, const float *src, const float *res, const float *g,
                          const float *b, size_t i, svfloat32_t vm, svfloat32_t vd,
                          svfloat32_t vr, int hg, int hb, int hadd)
{
    const svfloat32_t xm = svsub_f32_x(
        pg, svsub_f32_x(pg, src_v(pg, src, res, NULL, i, hadd, 0), vm), vd);
    const svfloat32_t w = hg ? svmul_f32_x(pg, svld1_f32(pg, g + i), vr) : vr;
    return hb ? svmla_f32_x(pg, svld1_f32(pg, b + i), xm, w) : svmul_f32_x(pg, xm, w);
}

LN_AI void apply_row(const float *src, const float *res, const float *g, const float *b,
                     float *y, size_t n, float mean, float dmean, float rstd, int hg, int hb,
                     int hadd)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t vm = svdup_n_f32(mean), vd = svdup_n_f32(dmean), vr = svdup_n_f32(rstd);
    const size_t vl = svcntw();
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        /* Both loads before either store: y may be x. */
        const svfloat32_t y0 = apply_v(pt, src, res, g, b, i, vm, vd, vr, hg, hb, hadd);
        const svfloat32_t y1 = apply_v(pt, src, res, g, b, i + vl, vm, vd, vr, hg, hb, hadd);
        svst1_f32(pt, y + i, y0);
        svst1_f32(pt, y + i + vl, y1);
    }
    for (; i < n; i += vl) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_f32(pg, y + i, apply_v(pg, src, res, g, b, i, vm, vd, vr, hg, hb, hadd));
    }
}

/* Reduce pass for one vector: sum(g), sum(g (x - m)) and sum(x - m) with the saved mean m
   (merging, so a partial vector adds nothing in its inactive lanes). */
LN_AI void reduce_v(svbool_t pg, const float *dy, const float *x, const float *g, size_t i,
                    svfloat32_t vm, svfloat32_t *sg, svfloat32_t *sgx, svfloat32_t *sd, int hg,
                    int wdx)
{
    /* Base pointers and an index: an absent (NULL) operand is never offset. */
    const svfloat32_t xc = svsub_f32_x(pg, svld1_f32(pg, x + i), vm);
    *sd = svadd_f32_m(pg, *sd, xc);
    if (wdx) {
        const svfloat32_t d = svld1_f32(pg, dy + i);
        const svfloat32_t gv = hg ? svmul_f32_x(pg, d, svld1_f32(pg, g + i)) : d;
        *sg = svadd_f32_m(pg, *sg, gv);
        *sgx = svmla_f32_m(pg, *sgx, gv, xc);
    }
}

/* The dx pass's per-row constants (kernels/ln_backward.h derives them): xhat = (x - m) rstd
   + kd, dx = rstd g + kb xhat + kc. Floats: SVE vectors cannot be fields. */
typedef struct bwd_k {
    float m, r, kd, kb, kc;
} bwd_k;

/* dx (loads, then the store: dx may be dy; streamed when `nt`), and this row's dy xhat and
   dy added to the block's partials. */
LN_AI void dx_v(svbool_t pg, const float *dy, const float *x, const float *g, float *dx,
                float *dgp, float *dbp, size_t i, svfloat32_t vm, svfloat32_t vr, svfloat32_t kd,
                svfloat32_t kb, svfloat32_t kc, int hg, int wdx, int wdg, int wdb, int wacc,
                int nt)
{
    const svfloat32_t xh = svmla_f32_x(pg, kd, svsub_f32_x(pg, svld1_f32(pg, x + i), vm), vr);
    const svfloat32_t d = svld1_f32(pg, dy + i);
    if (wdx) {
        const svfloat32_t gv = hg ? svmul_f32_x(pg, d, svld1_f32(pg, g + i)) : d;
        svfloat32_t v = svmla_f32_x(pg, svmla_f32_x(pg, kc, kb, xh), vr, gv);
        if (wacc)
            v = svadd_f32_x(pg, svld1_f32(pg, dx + i), v);
        if (nt)
            svstnt1_f32(pg, dx + i, v);
        else
            svst1_f32(pg, dx + i, v);
    }
    if (wdg)
        svst1_f32(pg, dgp + i, svmla_f32_x(pg, svld1_f32(pg, dgp + i), d, xh));
    if (wdb)
        svst1_f32(pg, dbp + i, svadd_f32_x(pg, svld1_f32(pg, dbp + i), d));
}

LN_AI void dx_row(const float *dy, const float *x, const float *g, float *dx,
                  float *restrict dgp, float *restrict dbp, size_t n, const bwd_k *k, int hg,
                  int wdx, int wdg, int wdb, int wacc, int nt)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw();
    const svfloat32_t vm = svdup_n_f32(k->m), vr = svdup_n_f32(k->r), kd = svdup_n_f32(k->kd);
    const svfloat32_t kb = svdup_n_f32(k->kb), kc = svdup_n_f32(k->kc);
#define LN_DX_V(pg, i)                                                                     \
    dx_v(pg, dy, x, g, dx, dgp, dbp, i, vm, vr, kd, kb, kc, hg, wdx, wdg, wdb, wacc, nt)
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        LN_DX_V(pt, i);
        LN_DX_V(pt, i + vl);
    }
    for (; i < n; i += vl)
        LN_DX_V(svwhilelt_b32_u64(i, n), i);
#undef LN_DX_V
}

/* Whether a row's operands are all finite: a row holding a NaN or Inf gives NaN where its
   values reach, as it should; only a row of finite values is worth a rescue. */
static int row_finite(const float *dy, const float *x, const float *g, size_t n, float mean,
                      float rstd)
{
    if (!isfinite(mean) || !isfinite(rstd))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || !isfinite(dy[i]) || (g && !isfinite(g[i])))
            return 0;
    return 1;
}

/* One row: the reduce pass, then dx and the partials. RMSNorm passes mean = 0 and
   centered = 0 (no correction of the mean, no mean(g) term). Returns 0, having written
   nothing, when a sum or constant overflowed on a row of finite values: the driver redoes
   it in double. */
LN_AI int bwd_row(const float *dy, const float *x, const float *g, float *dx,
                  float *restrict dgp, float *restrict dbp, size_t n, float mean, float rstd,
                  int centered, int hg, int wdx, int wdg, int wdb, int wacc, int nt)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw();
    const svfloat32_t vm = svdup_n_f32(mean);
    svfloat32_t sg0 = svdup_n_f32(0.0f), sg1 = sg0, sgx0 = sg0, sgx1 = sg0, sd0 = sg0, sd1 = sg0;
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        reduce_v(pt, dy, x, g, i, vm, &sg0, &sgx0, &sd0, hg, wdx);
        reduce_v(pt, dy, x, g, i + vl, vm, &sg1, &sgx1, &sd1, hg, wdx);
    }
    for (; i < n; i += vl)
        reduce_v(svwhilelt_b32_u64(i, n), dy, x, g, i, vm, &sg0, &sgx0, &sd0, hg, wdx);
    /* Fixed order: accumulator 0 + 1, then FADDV's architected lane tree; the constants in
       double, as kernels/ln_backward.h's bwd_constants. */
    const double r = rstd, inv_n = 1.0 / (double)n;
    double d = centered ? ln_mean_fix((double)svaddv_f32(pt, svadd_f32_x(pt, sd0, sd1)) * inv_n,
                                      mean)
                        : 0.0;
    const int dok = isfinite(d);
    d = dok ? d : 0.0; /* a NaN or Inf in x: that row goes uncorrected */
    double kb = 0.0, kc = 0.0;
    if (wdx) {
        const double sg = centered ? (double)svaddv_f32(pt, svadd_f32_x(pt, sg0, sg1)) : 0.0;
        const double sx = svaddv_f32(pt, svadd_f32_x(pt, sgx0, sgx1));
        kb = -r * r * (sx - d * sg) * inv_n;
        kc = -r * sg * inv_n;
    }
    const float fd = (float)(-d * r), fb = (float)kb, fc = (float)kc;
    const bwd_k k = {mean, rstd, fd, fb, fc};
    const int ok = dok && isfinite(fd) && isfinite(fb) && isfinite(fc) && isfinite(rstd);
    if (!ok && row_finite(dy, x, g, n, mean, rstd))
        return 0;
    if (nt && wdx && !wacc)
        dx_row(dy, x, g, dx, dgp, dbp, n, &k, hg, wdx, wdg, wdb, wacc, 1);
    else
        dx_row(dy, x, g, dx, dgp, dbp, n, &k, hg, wdx, wdg, wdb, wacc, 0);
    return 1;
}

/* What the rows of a call share, for arm_drivers.h. */
typedef ln_sve_plan ln_arm_plan;
static inline void plan_init(ln_arm_plan *p, size_t n) { ln_sve_plan_init(p, n); }

#include "arm/arm_drivers.h"

#include "kernels/entries.h"

LN_F32_ENTRIES(sve, ln_arm_forward, ln_arm_backward)
