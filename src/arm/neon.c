/* neon.c - AArch64 Advanced SIMD kernels: fused Welford statistics, centered apply and backward. */
#include "arm/arm_common.h"
#include "ln_internal.h"

/*
 * Statistics: four independent accumulators of 4 lanes each, 16 floats a block. One
 * accumulator's update is a sub -> fma -> sub -> fma chain (~12 cycles on Neoverse N1);
 * four of them keep both FP pipes busy instead of waiting on that chain.
 */
#define LN_BLOCK 16

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

/* One Welford step of one accumulator; r = 1/t, the step count all its lanes share. */
static inline __attribute__((always_inline)) void welford4(const float *p, float r,
                                                           float32x4_t *m, float32x4_t *s)
{
    const float32x4_t v = vld1q_f32(p);
    const float32x4_t d = vsubq_f32(v, *m);
    *m = vfmaq_n_f32(*m, d, r);
    *s = vfmaq_f32(*s, d, vsubq_f32(v, *m));
}

/* Blocks of the main statistics loop: every lane of every accumulator takes one step. */
static inline size_t stat_blocks(size_t n) { return n / LN_BLOCK; }

/* One row's mean and rstd. tab0 holds 1/t for the first LN_ARM_RTAB blocks (shared by the
   rows of a call: it depends on t only); longer rows refill a local table. */
static void row_stats(const float *x, size_t n, float eps, const float *tab0, float *mean,
                      float *rstd)
{
    const size_t nb = stat_blocks(n);
    /* Named registers, not arrays: gcc -O2 would keep an array on the stack. */
    float32x4_t m0 = vdupq_n_f32(0.0f), m1 = m0, m2 = m0, m3 = m0;
    float32x4_t s0 = m0, s1 = m0, s2 = m0, s3 = m0;
    float tab[LN_ARM_RTAB];
    const float *p = x;
    for (size_t b0 = 0; b0 < nb; b0 += LN_ARM_RTAB) {
        size_t len;
        const float *r = ln_arm_recip_chunk(tab0, tab, b0, nb, &len);
        for (size_t k = 0; k < len; k++, p += LN_BLOCK) {
            welford4(p, r[k], &m0, &s0);
            welford4(p + 4, r[k], &m1, &s1);
            welford4(p + 8, r[k], &m2, &s2);
            welford4(p + 12, r[k], &m3, &s3);
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
    const size_t nt = n - nb * LN_BLOCK;
    for (size_t i = 0; i < nt; i++) {
        const float dt = p[i] - tm;
        tm = fmaf(dt, ln_arm_tail_recip[i + 1], tm);
        ts = fmaf(dt, p[i] - tm, ts);
    }
    ln_arm_finish((double)(nb * LN_BLOCK), vm, vs, (double)nt, tm, ts, eps, mean, rstd);
}

/* y = (x - mean) * (rstd * gamma) + beta; the flags are constants after inlining, so each
   gamma/beta combination gets its own loop. */
static inline __attribute__((always_inline)) float32x4_t
apply4(const float *x, const float *g, const float *b, float32x4_t vm, float32x4_t vr, int hg,
       int hb)
{
    const float32x4_t xm = vsubq_f32(vld1q_f32(x), vm);
    const float32x4_t w = hg ? vmulq_f32(vld1q_f32(g), vr) : vr;
    return hb ? vfmaq_f32(vld1q_f32(b), xm, w) : vmulq_f32(xm, w);
}

static inline __attribute__((always_inline)) void
apply_row(const float *x, const float *g, const float *b, float *y, size_t n, float mean,
          float rstd, int hg, int hb)
{
    const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        /* All loads before any store: y may be x. */
        const float32x4_t y0 = apply4(x + i, g + i, b + i, vm, vr, hg, hb);
        const float32x4_t y1 = apply4(x + i + 4, g + i + 4, b + i + 4, vm, vr, hg, hb);
        const float32x4_t y2 = apply4(x + i + 8, g + i + 8, b + i + 8, vm, vr, hg, hb);
        const float32x4_t y3 = apply4(x + i + 12, g + i + 12, b + i + 12, vm, vr, hg, hb);
        vst1q_f32(y + i, y0);
        vst1q_f32(y + i + 4, y1);
        vst1q_f32(y + i + 8, y2);
        vst1q_f32(y + i + 12, y3);
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, apply4(x + i, g + i, b + i, vm, vr, hg, hb));
    /* Scalar tail: no vector access past the row's end. Same operations, same rounding. */
    for (; i < n; i++) {
        const float xm = x[i] - mean, w = hg ? g[i] * rstd : rstd;
        y[i] = hb ? fmaf(xm, w, b[i]) : xm * w;
    }
}

/* Reduce pass of one row for 4 columns: the sums dx needs, and the block's partials. */
static inline __attribute__((always_inline)) void
reduce4(const float *dy, const float *x, const float *g, float *dgp, float *dbp, float32x4_t vm,
        float32x4_t vr, float32x4_t *sg, float32x4_t *sgx, int hg, int wdx, int wdg, int wdb)
{
    const float32x4_t d = vld1q_f32(dy);
    const float32x4_t xh = vmulq_f32(vsubq_f32(vld1q_f32(x), vm), vr);
    if (wdx) {
        const float32x4_t gv = hg ? vmulq_f32(d, vld1q_f32(g)) : d;
        *sg = vaddq_f32(*sg, gv);
        *sgx = vfmaq_f32(*sgx, gv, xh);
    }
    if (wdg)
        vst1q_f32(dgp, vfmaq_f32(vld1q_f32(dgp), d, xh));
    if (wdb)
        vst1q_f32(dbp, vaddq_f32(vld1q_f32(dbp), d));
}

/* dx = rstd * (g - mean(g) - xhat * mean(g xhat)), with xhat * mgx as (x - mean) * a,
   a = rstd * mgx. Loads precede the store: dx may be dy. */
static inline __attribute__((always_inline)) void
dx4(const float *dy, const float *x, const float *g, float *dx, float32x4_t vm, float32x4_t vr,
    float32x4_t vmg, float32x4_t va, int hg)
{
    const float32x4_t xm = vsubq_f32(vld1q_f32(x), vm);
    const float32x4_t gv = hg ? vmulq_f32(vld1q_f32(dy), vld1q_f32(g)) : vld1q_f32(dy);
    vst1q_f32(dx, vmulq_f32(vfmsq_f32(vsubq_f32(gv, vmg), xm, va), vr));
}

static inline __attribute__((always_inline)) void
bwd_row(const float *dy, const float *x, const float *g, float *dx, float *restrict dgp,
        float *restrict dbp, size_t n, float mean, float rstd, int hg, int wdx, int wdg, int wdb)
{
    const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd);
    float32x4_t sg0 = vdupq_n_f32(0.0f), sg1 = sg0, sgx0 = sg0, sgx1 = sg0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        reduce4(dy + i, x + i, g + i, dgp + i, dbp + i, vm, vr, &sg0, &sgx0, hg, wdx, wdg, wdb);
        reduce4(dy + i + 4, x + i + 4, g + i + 4, dgp + i + 4, dbp + i + 4, vm, vr, &sg1, &sgx1,
                hg, wdx, wdg, wdb);
    }
    for (; i + 4 <= n; i += 4)
        reduce4(dy + i, x + i, g + i, dgp + i, dbp + i, vm, vr, &sg0, &sgx0, hg, wdx, wdg, wdb);
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
    const float mg = sum_g / (float)n, a = rstd * (sum_gx / (float)n);
    const float32x4_t vmg = vdupq_n_f32(mg), va = vdupq_n_f32(a);
    i = 0;
    for (; i + 8 <= n; i += 8) {
        dx4(dy + i, x + i, g + i, dx + i, vm, vr, vmg, va, hg);
        dx4(dy + i + 4, x + i + 4, g + i + 4, dx + i + 4, vm, vr, vmg, va, hg);
    }
    for (; i + 4 <= n; i += 4)
        dx4(dy + i, x + i, g + i, dx + i, vm, vr, vmg, va, hg);
    for (; i < n; i++) {
        const float gi = hg ? dy[i] * g[i] : dy[i];
        dx[i] = fmaf(-(x[i] - mean), a, gi - mg) * rstd;
    }
}

#include "arm/arm_drivers.h"

const ln_kernels ln_kernels_neon = {
    .isa = LN_ISA_NEON,
    .name = "neon",
    .forward = ln_arm_forward,
    .backward = ln_arm_backward,
};
