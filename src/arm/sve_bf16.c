/* sve_bf16.c - bf16 LayerNorm with SVE (any vector length): float32 Welford, predicated tails, RNE
 * stores. */
#include <arm_sve.h>
#include <math.h>

#include "bf16_kernel.h"
#include "welford.h"

#define NACC 4  /* independent Welford accumulators: breaks the sub-fma-sub-fma chain */
#define MAXW 64 /* the largest SVE vector, 2048 bits, in floats */

/* Predicated (inactive lanes neither read nor faulted on), zero-extending 16 -> 32 bits,
   then exact: shift into the high half. */
static inline svfloat32_t load_bf(svbool_t pg, const uint16_t *p)
{
    return svreinterpret_f32_u32(svlsl_n_u32_x(pg, svld1uh_u32(pg, p), 16));
}

static inline svfloat32_t loadf(svbool_t pg, const float *p, float fill)
{
    return p ? svld1_f32(pg, p) : svdup_n_f32(fill);
}

/* Round to nearest even on the bits, NaN made quiet, then a truncating 16-bit store of
   the active lanes: the lane form of ln_f32_to_bf16. native: BFCVT (FEAT_BF16 for SVE)
   does the same rounding into the low half of each 32-bit lane (Linux's FPCR: nearest
   even, subnormals kept, NaN quieted keeping its top bits); inline asm, so the file needs
   no +bf16 flag, and only the table chosen by HWCAP2_SVEBF16 reaches it. */
static inline void store_bf(svbool_t pg, uint16_t *p, svfloat32_t v, int native)
{
    svuint32_t r = svdup_n_u32(0);
    if (native) {
        __asm__(".arch_extension bf16\n\tbfcvt %0.h, %1/m, %2.s" : "+w"(r) : "Upl"(pg), "w"(v));
    } else {
        const svuint32_t u = svreinterpret_u32_f32(v), hi = svlsr_n_u32_x(pg, u, 16);
        const svuint32_t lsb = svand_n_u32_x(pg, hi, 1);
        const svuint32_t rne =
            svlsr_n_u32_x(pg, svadd_u32_x(pg, svadd_n_u32_x(pg, u, 0x7FFF), lsb), 16);
        r = svsel_u32(svcmpuo_f32(pg, v, v), svorr_n_u32_x(pg, hi, 0x40), rne);
    }
    svst1h_u32(pg, p, r);
}

/* One Welford update of the active lanes; inactive lanes keep their state (merging). */
static inline void step(svbool_t pg, svfloat32_t *m, svfloat32_t *s, svfloat32_t v, svfloat32_t inv)
{
    const svfloat32_t d = svsub_f32_x(pg, v, *m), mn = svmla_f32_m(pg, *m, d, inv);
    *s = svmla_f32_m(pg, *s, d, svsub_f32_x(pg, v, mn));
    *m = mn;
}

static void row_stats(const uint16_t *x, size_t n, float *mean, float *m2)
{
    const size_t w = svcntw();
    const svbool_t all = svptrue_b32();
    /* SVE values cannot form arrays: the NACC accumulators are named. */
    svfloat32_t m0 = svdup_n_f32(0.0f), m1 = m0, m2v = m0, m3 = m0, s0 = m0, s1 = m0, s2 = m0,
                s3 = m0;
    const size_t nblk = n / (w * NACC);
    for (size_t b = 0; b < nblk; b++) {
        /* Every lane of every accumulator has seen b+1 values: one broadcast reciprocal. */
        const svfloat32_t inv = svdup_n_f32(1.0f / (float)(b + 1));
        const uint16_t *p = x + b * NACC * w;
        step(all, &m0, &s0, load_bf(all, p), inv);
        step(all, &m1, &s1, load_bf(all, p + w), inv);
        step(all, &m2v, &s2, load_bf(all, p + 2 * w), inv);
        step(all, &m3, &s3, load_bf(all, p + 3 * w), inv);
    }
    /* The rest: accumulator j takes the j-th vector of it; lanes past the row keep their
       state and count nblk, the others nblk + 1. */
    const size_t done = nblk * w * NACC;
    const svfloat32_t inv = svdup_n_f32(1.0f / (float)(nblk + 1)), base = svdup_n_f32((float)nblk);
    const svbool_t p0 = svwhilelt_b32_u64(done, n), p1 = svwhilelt_b32_u64(done + w, n);
    const svbool_t p2 = svwhilelt_b32_u64(done + 2 * w, n), p3 = svwhilelt_b32_u64(done + 3 * w, n);
    step(p0, &m0, &s0, load_bf(p0, x + done), inv);
    step(p1, &m1, &s1, load_bf(p1, x + done + w), inv);
    step(p2, &m2v, &s2, load_bf(p2, x + done + 2 * w), inv);
    step(p3, &m3, &s3, load_bf(p3, x + done + 3 * w), inv);
    float fm[NACC * MAXW], fs[NACC * MAXW], fc[NACC * MAXW];
    svst1_f32(all, fm, m0), svst1_f32(all, fm + w, m1), svst1_f32(all, fm + 2 * w, m2v),
        svst1_f32(all, fm + 3 * w, m3);
    svst1_f32(all, fs, s0), svst1_f32(all, fs + w, s1), svst1_f32(all, fs + 2 * w, s2),
        svst1_f32(all, fs + 3 * w, s3);
    svst1_f32(all, fc, svadd_n_f32_m(p0, base, 1.0f));
    svst1_f32(all, fc + w, svadd_n_f32_m(p1, base, 1.0f));
    svst1_f32(all, fc + 2 * w, svadd_n_f32_m(p2, base, 1.0f));
    svst1_f32(all, fc + 3 * w, svadd_n_f32_m(p3, base, 1.0f));
    ln_chan_reduce(fm, fs, fc, NACC, (int)w);
    *mean = fm[0];
    *m2 = fs[0];
}

#define LN_ALWAYS_INLINE static inline __attribute__((always_inline))

LN_ALWAYS_INLINE void forward_rows(const ln_bf16_fwd_args *a, size_t r0, size_t r1, int native)
{
    const size_t n = a->cols, w = svcntw();
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        float mean, m2;
        row_stats(x, n, &mean, &m2);
        const float rstd = 1.0f / sqrtf(m2 / (float)n + a->eps);
        const svfloat32_t vm = svdup_n_f32(mean), vr = svdup_n_f32(rstd);
        for (size_t i = 0; i < n; i += w) {
            /* Centered apply: (x - mean) * (rstd * gamma) + beta; a constant row gives beta. */
            const svbool_t pg = svwhilelt_b32_u64(i, n);
            const svfloat32_t sc =
                a->gamma ? svmul_f32_x(pg, loadf(pg, a->gamma + i, 0.0f), vr) : vr;
            const svfloat32_t b = loadf(pg, a->beta ? a->beta + i : NULL, 0.0f);
            store_bf(pg, y + i, svmla_f32_x(pg, b, svsub_f32_x(pg, load_bf(pg, x + i), vm), sc),
                     native);
        }
        if (a->mean)
            a->mean[r] = mean;
        if (a->rstd)
            a->rstd[r] = rstd;
    }
}

/* One row: pass 1 sums g and g*xhat and adds this row's dy*xhat, dy to the partials
   (dy is read before dx, which may be dy, is written); pass 2 writes dx. Sums use
   merging predication, so inactive lanes add nothing; svaddv's order is fixed by the
   hardware for a given vector length. */
LN_ALWAYS_INLINE void backward_row(const ln_bf16_bwd_args *a, size_t r, float *dgamma, float *dbeta,
                                   int native)
{
    const size_t n = a->cols, w = svcntw();
    const uint16_t *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
    const svfloat32_t vm = svdup_n_f32(a->mean[r]), vr = svdup_n_f32(a->rstd[r]);
    svfloat32_t sg = svdup_n_f32(0.0f), sgx = svdup_n_f32(0.0f);
    for (size_t i = 0; i < n; i += w) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t d = load_bf(pg, dy + i);
        const svfloat32_t xh = svmul_f32_x(pg, svsub_f32_x(pg, load_bf(pg, x + i), vm), vr);
        const svfloat32_t g = a->gamma ? svmul_f32_x(pg, d, loadf(pg, a->gamma + i, 0.0f)) : d;
        sg = svadd_f32_m(pg, sg, g);
        sgx = svmla_f32_m(pg, sgx, g, xh);
        if (dgamma)
            svst1_f32(pg, dgamma + i, svmla_f32_x(pg, svld1_f32(pg, dgamma + i), d, xh));
        if (dbeta)
            svst1_f32(pg, dbeta + i, svadd_f32_x(pg, svld1_f32(pg, dbeta + i), d));
    }
    if (!a->dx)
        return;
    uint16_t *dx = a->dx + r * a->lddx;
    const svbool_t all = svptrue_b32();
    const svfloat32_t mg = svdup_n_f32(svaddv_f32(all, sg) / (float)n);
    const svfloat32_t mgx = svdup_n_f32(svaddv_f32(all, sgx) / (float)n);
    for (size_t i = 0; i < n; i += w) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t d = load_bf(pg, dy + i);
        const svfloat32_t xh = svmul_f32_x(pg, svsub_f32_x(pg, load_bf(pg, x + i), vm), vr);
        const svfloat32_t g = a->gamma ? svmul_f32_x(pg, d, loadf(pg, a->gamma + i, 0.0f)) : d;
        store_bf(pg, dx + i, svmul_f32_x(pg, vr, svmls_f32_x(pg, svsub_f32_x(pg, g, mg), xh, mgx)),
                 native);
    }
}

void ln_bf16_forward_sve(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    forward_rows(a, r0, r1, 0);
}

void ln_bf16_forward_svebf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
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

void ln_bf16_backward_sve(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, row_shift);
}

void ln_bf16_backward_svebf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                              float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, row_native);
}
