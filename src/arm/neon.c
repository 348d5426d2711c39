/* neon.c - AArch64 Advanced SIMD kernels: fused Welford statistics, centered apply and backward. */
#include "arm/arm_common.h"
#include "ln_internal.h"

/*
 * Statistics: four independent accumulators of 4 lanes each, 16 floats a block. One
 * accumulator's update is a sub -> fma -> sub -> fma chain (~12 cycles on Neoverse N1);
 * four of them keep both FP pipes busy instead of waiting on that chain.
 */
#define LN_BLOCK 16
#define LN_AI static inline __attribute__((always_inline))

/* Merges two Welford partials of equal count c per lane (Chan: nb/n = 1/2, na*nb/n = c/2). */
static inline void merge_equal(float32x4_t *m, float32x4_t *s, float32x4_t mb, float32x4_t sb,
                               float half_c)
{
    const float32x4_t d = vsubq_f32(mb, *m);
    *m = vfmaq_n_f32(*m, d, 0.5f);
    *s = vfmaq_n_f32(vaddq_f32(*s, sb), vmulq_f32(d, d), half_c);
}

static inline void merge_equal2(float32x2_t *m, float32x2_t *s, float32x2_t mb, float32x2_t sb,
                                float half_c)
{
    const float32x2_t d = vsub_f32(mb, *m);
    *m = vfma_n_f32(*m, d, 0.5f);
    *s = vfma_n_f32(vadd_f32(*s, sb), vmul_f32(d, d), half_c);
}

/* The value normalized, 4 columns from i: x, or s = x + res, stored to sum when asked
   (read before the store: sum may be res). */
LN_AI float32x4_t src4(const float *x, const float *res, float *sum, size_t i, int hres,
                       int hsum)
{
    float32x4_t v = vld1q_f32(x + i);
    if (hres) {
        v = vaddq_f32(v, vld1q_f32(res + i));
        if (hsum)
            vst1q_f32(sum + i, v);
    }
    return v;
}

LN_AI float src1(const float *x, const float *res, float *sum, size_t i, int hres, int hsum)
{
    float v = x[i];
    if (hres) {
        v += res[i];
        if (hsum)
            sum[i] = v;
    }
    return v;
}

/* One Welford step of one accumulator; r = 1/t, the step count all its lanes share. */
LN_AI void welford4(float32x4_t v, float r, float32x4_t *m, float32x4_t *s)
{
    const float32x4_t d = vsubq_f32(v, *m);
    *m = vfmaq_n_f32(*m, d, r);
    *s = vfmaq_f32(*s, d, vsubq_f32(v, *m));
}

/* Blocks of the main statistics loop: every lane of every accumulator takes one step. */
static inline size_t stat_blocks(size_t n) { return n / LN_BLOCK; }

/* RMSNorm's statistics: the mean square, four accumulators then the scalar tail, summed
   in a fixed order; mean is 0 (so the shared apply computes x * (rstd * gamma) + beta). */
LN_AI void row_ms(const float *x, const float *res, float *sum, size_t n, float eps,
                  float *mean, float *rstd, int hres, int hsum)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + LN_BLOCK <= n; i += LN_BLOCK) {
        const float32x4_t v0 = src4(x, res, sum, i, hres, hsum);
        const float32x4_t v1 = src4(x, res, sum, i + 4, hres, hsum);
        const float32x4_t v2 = src4(x, res, sum, i + 8, hres, hsum);
        const float32x4_t v3 = src4(x, res, sum, i + 12, hres, hsum);
        s0 = vfmaq_f32(s0, v0, v0);
        s1 = vfmaq_f32(s1, v1, v1);
        s2 = vfmaq_f32(s2, v2, v2);
        s3 = vfmaq_f32(s3, v3, v3);
    }
    float t = 0.0f;
    for (; i < n; i++) {
        const float v = src1(x, res, sum, i, hres, hsum);
        t = fmaf(v, v, t);
    }
    const float ss = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3))) + t;
    *mean = 0.0f;
    *rstd = (float)(1.0 / sqrt((double)ss / (double)n + (double)eps));
}

/* One row's statistics in one pass (storing s = x + res on the way when asked). tab0 holds
   1/t for the first LN_ARM_RTAB blocks (shared by the rows of a call: it depends on t
   only); longer rows refill a local table. */
LN_AI void row_stats(const float *x, const float *res, float *sum, size_t n, float eps,
                     const float *tab0, float *mean, float *rstd, int rms, int hres, int hsum)
{
    if (rms) {
        row_ms(x, res, sum, n, eps, mean, rstd, hres, hsum);
        return;
    }
    const size_t nb = stat_blocks(n);
    /* Named registers, not arrays: gcc -O2 would keep an array on the stack. */
    float32x4_t m0 = vdupq_n_f32(0.0f), m1 = m0, m2 = m0, m3 = m0;
    float32x4_t s0 = m0, s1 = m0, s2 = m0, s3 = m0;
    float tab[LN_ARM_RTAB];
    size_t i = 0;
    for (size_t b0 = 0; b0 < nb; b0 += LN_ARM_RTAB) {
        size_t len;
        const float *r = ln_arm_recip_chunk(tab0, tab, b0, nb, &len);
        for (size_t k = 0; k < len; k++, i += LN_BLOCK) {
            welford4(src4(x, res, sum, i, hres, hsum), r[k], &m0, &s0);
            welford4(src4(x, res, sum, i + 4, hres, hsum), r[k], &m1, &s1);
            welford4(src4(x, res, sum, i + 8, hres, hsum), r[k], &m2, &s2);
            welford4(src4(x, res, sum, i + 12, hres, hsum), r[k], &m3, &s3);
        }
    }
    /* Fixed merge order: accumulators (0,1) (2,3), then the pair, then lanes (0,2) (1,3),
       then the last two lanes. Every lane has seen nb elements. */
    const float c = (float)nb;
    merge_equal(&m0, &s0, m1, s1, 0.5f * c);
    merge_equal(&m2, &s2, m3, s3, 0.5f * c);
    merge_equal(&m0, &s0, m2, s2, c);
    float32x2_t mh = vget_low_f32(m0), sh = vget_low_f32(s0);
    merge_equal2(&mh, &sh, vget_high_f32(m0), vget_high_f32(s0), 2.0f * c);
    const float d = vget_lane_f32(mh, 1) - vget_lane_f32(mh, 0);
    const float vm = vget_lane_f32(mh, 0) + 0.5f * d;
    const float vs = vget_lane_f32(sh, 0) + vget_lane_f32(sh, 1) + d * d * (4.0f * c);

    /* The tail (< 16 floats) is a scalar Welford of its own, merged once. */
    float tm = 0.0f, ts = 0.0f;
    for (size_t k = 1; i < n; i++, k++) {
        const float v = src1(x, res, sum, i, hres, hsum), dt = v - tm;
        tm = fmaf(dt, ln_arm_tail_recip[k], tm);
        ts = fmaf(dt, v - tm, ts);
    }
    const size_t nt = n - nb * LN_BLOCK;
    ln_arm_finish((double)(nb * LN_BLOCK), vm, vs, (double)nt, tm, ts, eps, mean, rstd);
}

/* y = (v - mean) * (rstd * gamma) + beta, v = src (+ res when hadd: the residual sum was
   not stored, so it is formed again, with the same single rounding). */
LN_AI float32x4_t apply4(const float *src, const float *res, const float *g, const float *b,
                         size_t i, float32x4_t vm, float32x4_t vr, int hg, int hb, int hadd)
{
    const float32x4_t v = src4(src, res, NULL, i, hadd, 0);
    const float32x4_t xm = vsubq_f32(v, vm);
    const float32x4_t w = hg ? vmulq_f32(vld1q_f32(g + i), vr) : vr;
    return hb ? vfmaq_f32(vld1q_f32(b + i), xm, w) : vmulq_f32(xm, w);
}

LN_AI void apply_row(const float *src, const float *res, const float *g, const float *b,
                     float *y, size_t n, float mean, float rstd, int hg, int hb, int hadd)
{
    const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        /* All loads before any store: y may be x. */
        const float32x4_t y0 = apply4(src, res, g, b, i, vm, vr, hg, hb, hadd);
        const float32x4_t y1 = apply4(src, res, g, b, i + 4, vm, vr, hg, hb, hadd);
        const float32x4_t y2 = apply4(src, res, g, b, i + 8, vm, vr, hg, hb, hadd);
        const float32x4_t y3 = apply4(src, res, g, b, i + 12, vm, vr, hg, hb, hadd);
        vst1q_f32(y + i, y0);
        vst1q_f32(y + i + 4, y1);
        vst1q_f32(y + i + 8, y2);
        vst1q_f32(y + i + 12, y3);
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, apply4(src, res, g, b, i, vm, vr, hg, hb, hadd));
    /* Scalar tail: no vector access past the row's end. Same operations, same rounding. */
    for (; i < n; i++) {
        const float xm = src1(src, res, NULL, i, hadd, 0) - mean;
        const float w = hg ? g[i] * rstd : rstd;
        y[i] = hb ? fmaf(xm, w, b[i]) : xm * w;
    }
}

/* Reduce pass of one row for 4 columns: the sums dx needs, and the block's partials. */
LN_AI void reduce4(const float *dy, const float *x, const float *g, float *dgp, float *dbp,
                   size_t i, float32x4_t vm, float32x4_t vr, float32x4_t *sg, float32x4_t *sgx,
                   int hg, int wdx, int wdg, int wdb)
{
    /* Base pointers and an index: an absent (NULL) operand is never offset. */
    const float32x4_t d = vld1q_f32(dy + i);
    const float32x4_t xh = vmulq_f32(vsubq_f32(vld1q_f32(x + i), vm), vr);
    if (wdx) {
        const float32x4_t gv = hg ? vmulq_f32(d, vld1q_f32(g + i)) : d;
        *sg = vaddq_f32(*sg, gv);
        *sgx = vfmaq_f32(*sgx, gv, xh);
    }
    if (wdg)
        vst1q_f32(dgp + i, vfmaq_f32(vld1q_f32(dgp + i), d, xh));
    if (wdb)
        vst1q_f32(dbp + i, vaddq_f32(vld1q_f32(dbp + i), d));
}

/* dx = rstd * (g - mean(g) - xhat * mean(g xhat)), with xhat * mgx as (x - mean) * a,
   a = rstd * mgx; added to dx when accumulating. Loads precede the store: dx may be dy. */
LN_AI void dx4(const float *dy, const float *x, const float *g, float *dx, size_t i,
               float32x4_t vm, float32x4_t vr, float32x4_t vmg, float32x4_t va, int hg, int wacc)
{
    const float32x4_t xm = vsubq_f32(vld1q_f32(x + i), vm);
    const float32x4_t d = vld1q_f32(dy + i);
    const float32x4_t gv = hg ? vmulq_f32(d, vld1q_f32(g + i)) : d;
    const float32x4_t v = vmulq_f32(vfmsq_f32(vsubq_f32(gv, vmg), xm, va), vr);
    vst1q_f32(dx + i, wacc ? vaddq_f32(vld1q_f32(dx + i), v) : v);
}

/* One row: the reduce pass (dgamma/dbeta partials, and the sums dx needs), then dx.
   RMSNorm passes mean = 0 and centered = 0 (no mean(g) term). */
LN_AI void bwd_row(const float *dy, const float *x, const float *g, float *dx,
                   float *restrict dgp, float *restrict dbp, size_t n, float mean, float rstd,
                   int centered, int hg, int wdx, int wdg, int wdb, int wacc)
{
    const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd);
    float32x4_t sg0 = vdupq_n_f32(0.0f), sg1 = sg0, sgx0 = sg0, sgx1 = sg0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        reduce4(dy, x, g, dgp, dbp, i, vm, vr, &sg0, &sgx0, hg, wdx, wdg, wdb);
        reduce4(dy, x, g, dgp, dbp, i + 4, vm, vr, &sg1, &sgx1, hg, wdx, wdg, wdb);
    }
    for (; i + 4 <= n; i += 4)
        reduce4(dy, x, g, dgp, dbp, i, vm, vr, &sg0, &sgx0, hg, wdx, wdg, wdb);
    float tg = 0.0f, tgx = 0.0f;
    for (; i < n; i++) {
        const float xh = (x[i] - mean) * rstd, gi = hg ? dy[i] * g[i] : dy[i];
        tg += gi;
        tgx = fmaf(gi, xh, tgx);
        if (wdg)
            dgp[i] = fmaf(dy[i], xh, dgp[i]);
        if (wdb)
            dbp[i] += dy[i];
    }
    if (!wdx)
        return;
    /* Fixed order: accumulator 0 + 1, the pairwise lane sum, then the scalar tail. */
    const float sum_g = vaddvq_f32(vaddq_f32(sg0, sg1)) + tg;
    const float sum_gx = vaddvq_f32(vaddq_f32(sgx0, sgx1)) + tgx;
    const float mg = centered ? sum_g / (float)n : 0.0f, a = rstd * (sum_gx / (float)n);
    const float32x4_t vmg = vdupq_n_f32(mg), va = vdupq_n_f32(a);
    i = 0;
    for (; i + 8 <= n; i += 8) {
        dx4(dy, x, g, dx, i, vm, vr, vmg, va, hg, wacc);
        dx4(dy, x, g, dx, i + 4, vm, vr, vmg, va, hg, wacc);
    }
    for (; i + 4 <= n; i += 4)
        dx4(dy, x, g, dx, i, vm, vr, vmg, va, hg, wacc);
    for (; i < n; i++) {
        const float gi = hg ? dy[i] * g[i] : dy[i];
        const float v = fmaf(-(x[i] - mean), a, gi - mg) * rstd;
        dx[i] = wacc ? dx[i] + v : v;
    }
}

#include "arm/arm_drivers.h"

void ln_forward_neon(const ln_fwd_args *a, size_t r0, size_t r1) { ln_arm_forward(a, r0, r1); }

void ln_backward_neon(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    ln_arm_backward(a, r0, r1, dg, db);
}
