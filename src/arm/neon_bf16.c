/* neon_bf16.c - bf16 LayerNorm with AArch64 Advanced SIMD: float32 Welford on widened lanes, RNE
 * stores. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "bf16_kernel.h"
#include "welford.h"

#define W 4    /* float lanes */
#define NACC 4 /* independent Welford accumulators: breaks the sub-fma-sub-fma chain */

/* bf16 -> float is exact: widen each 16-bit lane into the high half of 32 bits. */
static inline float32x4_t load4(const uint16_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

/* NEON has no masked load: a tail (len < 4) goes through a zeroed stack copy, so nothing
   outside the row is read. */
static inline float32x4_t load_n(const uint16_t *p, size_t len)
{
    if (len >= W)
        return load4(p);
    uint16_t b[W] = {0};
    memcpy(b, p, len * sizeof *p);
    return load4(b);
}

static inline float32x4_t loadf(const float *p, size_t len, float fill)
{
    if (!p)
        return vdupq_n_f32(fill);
    if (len >= W)
        return vld1q_f32(p);
    float b[W] = {0};
    memcpy(b, p, len * sizeof *p);
    return vld1q_f32(b);
}

static inline uint32x4_t lane_mask(size_t len)
{
    static const uint32_t idx[W] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(idx), vdupq_n_u32((uint32_t)(len < W ? len : W)));
}

/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16. */
static inline uint16x4_t narrow_shift(float32x4_t v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v), hi = vshrq_n_u32(u, 16);
    const uint32x4_t lsb = vandq_u32(hi, vdupq_n_u32(1));
    const uint32x4_t rne = vshrq_n_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), lsb), 16);
    const uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
    return vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, vdupq_n_u32(0x40)), rne));
}

/* BFCVTN (FEAT_BF16): the same rounding in one instruction (with Linux's FPCR: nearest
   even, subnormals kept, NaN quieted keeping its top bits). Inline asm, so the file needs
   no +bf16 flag that would let the compiler use BF16 elsewhere; only the table chosen by
   HWCAP2_BF16 reaches it. */
static inline uint16x4_t narrow_bfcvt(float32x4_t v)
{
    uint16x4_t r;
    __asm__(".arch_extension bf16\n\tbfcvtn %0.4h, %1.4s" : "=w"(r) : "w"(v));
    return r;
}

static inline uint16x4_t narrow(float32x4_t v, int native)
{
    return native ? narrow_bfcvt(v) : narrow_shift(v);
}

static inline void store_n(uint16_t *p, float32x4_t v, size_t len, int native)
{
    if (len >= W) {
        vst1_u16(p, narrow(v, native));
        return;
    }
    uint16_t b[W];
    vst1_u16(b, narrow(v, native));
    memcpy(p, b, len * sizeof *p);
}

typedef ln_welford_plan plan; /* merge coefficients for every row of a call */

static inline void merge(float32x4_t *ma, float32x4_t *sa, float32x4_t mb, float32x4_t sb,
                         const plan *p, int k)
{
    const float32x4_t d = vsubq_f32(mb, *ma);
    *ma = vfmaq_f32(*ma, d, vld1q_f32(p->f1 + k * W));
    *sa = vfmaq_f32(vaddq_f32(*sa, sb), vmulq_f32(d, vld1q_f32(p->f2 + k * W)), d);
}

static void row_stats(const uint16_t *x, size_t n, const plan *p, float *mean, float *m2)
{
    float32x4_t m[NACC], s[NACC];
    for (int j = 0; j < NACC; j++)
        m[j] = s[j] = vdupq_n_f32(0.0f);
    const size_t nblk = n / (W * NACC);
    for (size_t b = 0; b < nblk; b++) {
        /* Every lane of every accumulator has seen b+1 values: one broadcast reciprocal. */
        const float32x4_t inv = vdupq_n_f32(1.0f / (float)(b + 1));
        for (int j = 0; j < NACC; j++) {
            const float32x4_t v = load4(x + (b * NACC + j) * W), d = vsubq_f32(v, m[j]);
            m[j] = vfmaq_f32(m[j], d, inv);
            s[j] = vfmaq_f32(s[j], d, vsubq_f32(v, m[j]));
        }
    }
    /* The last < 16 values: accumulator j takes the j-th group of 4; lanes past the row
       keep their state (the plan counts them one short). */
    const size_t rem = n - nblk * W * NACC;
    const float32x4_t inv = vdupq_n_f32(1.0f / (float)(nblk + 1));
    for (int j = 0; j < NACC; j++) {
        const size_t off = (size_t)j * W, len = rem > off ? rem - off : 0;
        if (!len)
            continue;
        const float32x4_t v = load_n(x + nblk * W * NACC + off, len), d = vsubq_f32(v, m[j]);
        const uint32x4_t act = lane_mask(len);
        const float32x4_t mn = vfmaq_f32(m[j], d, inv);
        s[j] = vbslq_f32(act, vfmaq_f32(s[j], d, vsubq_f32(v, mn)), s[j]);
        m[j] = vbslq_f32(act, mn, m[j]);
    }
    /* The plan's fixed order: accumulators 0+1, 2+3, 0+2, then lanes l+2, l+1. */
    merge(&m[0], &s[0], m[1], s[1], p, 0);
    merge(&m[2], &s[2], m[3], s[3], p, 1);
    merge(&m[0], &s[0], m[2], s[2], p, 2);
    merge(&m[0], &s[0], vextq_f32(m[0], m[0], 2), vextq_f32(s[0], s[0], 2), p, 3);
    merge(&m[0], &s[0], vrev64q_f32(m[0]), vrev64q_f32(s[0]), p, 4);
    *mean = vgetq_lane_f32(m[0], 0);
    *m2 = vgetq_lane_f32(s[0], 0);
}

#define LN_ALWAYS_INLINE static inline __attribute__((always_inline))

LN_ALWAYS_INLINE void forward_rows(const ln_bf16_fwd_args *a, size_t r0, size_t r1, int native)
{
    const size_t n = a->cols;
    plan p;
    ln_welford_plan_init(&p, n, NACC, W);
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        float mean, m2;
        row_stats(x, n, &p, &mean, &m2);
        const float rstd = 1.0f / sqrtf(m2 / (float)n + a->eps);
        const float32x4_t vm = vdupq_n_f32(mean), vr = vdupq_n_f32(rstd);
        for (size_t i = 0; i < n; i += W) {
            /* Centered apply: (x - mean) * (rstd * gamma) + beta; a constant row gives beta. */
            const size_t len = n - i;
            const float32x4_t sc = a->gamma ? vmulq_f32(loadf(a->gamma + i, len, 0.0f), vr) : vr;
            const float32x4_t b = loadf(a->beta ? a->beta + i : NULL, len, 0.0f);
            store_n(y + i, vfmaq_f32(b, vsubq_f32(load_n(x + i, len), vm), sc), len, native);
        }
        if (a->mean)
            a->mean[r] = mean;
        if (a->rstd)
            a->rstd[r] = rstd;
    }
}

static inline float hsum(float32x4_t v)
{
    float t[W];
    vst1q_f32(t, v);
    return (t[0] + t[2]) + (t[1] + t[3]);
}

static inline void add_part(float *p, float32x4_t v, size_t len)
{
    if (len >= W) {
        vst1q_f32(p, vaddq_f32(vld1q_f32(p), v));
        return;
    }
    float b[W];
    vst1q_f32(b, vaddq_f32(loadf(p, len, 0.0f), v));
    memcpy(p, b, len * sizeof *p);
}

/* One row: pass 1 sums g and g*xhat and adds this row's dy*xhat, dy to the partials
   (dy is read before dx, which may be dy, is written); pass 2 writes dx. */
LN_ALWAYS_INLINE void backward_row(const ln_bf16_bwd_args *a, size_t r, float *dgamma, float *dbeta,
                                   int native)
{
    const size_t n = a->cols;
    const uint16_t *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
    const float32x4_t vm = vdupq_n_f32(a->mean[r]), vr = vdupq_n_f32(a->rstd[r]);
    float32x4_t sg = vdupq_n_f32(0.0f), sgx = vdupq_n_f32(0.0f);
    for (size_t i = 0; i < n; i += W) {
        const size_t len = n - i;
        const float32x4_t d = load_n(dy + i, len),
                          xh = vmulq_f32(vsubq_f32(load_n(x + i, len), vm), vr);
        const float32x4_t g = a->gamma ? vmulq_f32(d, loadf(a->gamma + i, len, 0.0f)) : d;
        sg = vaddq_f32(sg, g);
        sgx = vfmaq_f32(sgx, g, xh);
        if (dgamma)
            add_part(dgamma + i, vmulq_f32(d, xh), len);
        if (dbeta)
            add_part(dbeta + i, d, len);
    }
    if (!a->dx)
        return;
    uint16_t *dx = a->dx + r * a->lddx;
    const float32x4_t mg = vdupq_n_f32(hsum(sg) / (float)n),
                      mgx = vdupq_n_f32(hsum(sgx) / (float)n);
    for (size_t i = 0; i < n; i += W) {
        const size_t len = n - i;
        const float32x4_t d = load_n(dy + i, len),
                          xh = vmulq_f32(vsubq_f32(load_n(x + i, len), vm), vr);
        const float32x4_t g = a->gamma ? vmulq_f32(d, loadf(a->gamma + i, len, 0.0f)) : d;
        store_n(dx + i, vmulq_f32(vr, vfmsq_f32(vsubq_f32(g, mg), xh, mgx)), len, native);
    }
}

void ln_bf16_forward_neon(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    forward_rows(a, r0, r1, 0);
}

void ln_bf16_forward_neonbf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    forward_rows(a, r0, r1, 1);
}

static void row_shift(const ln_bf16_bwd_args *a, size_t r, float *dg, float *db)
{
    backward_row(a, r, dg, db, 0);
}

static void row_native(const ln_bf16_bwd_args *a, size_t r, float *dg, float *db)
{
    backward_row(a, r, dg, db, 1);
}

void ln_bf16_backward_neon(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                           float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, row_shift);
}

void ln_bf16_backward_neonbf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                               float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, row_native);
}
