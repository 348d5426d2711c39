/* sve_bf16.c - bf16 LayerNorm with SVE (any vector length): float32 Welford, predicated tails, RNE
 * stores. */
#include <arm_sve.h>
#include <math.h>

#include "arm/sve_stats.h"
#include "bf16_kernel.h"

/* Predicated (inactive lanes neither read nor faulted on), zero-extending 16 -> 32 bits,
   then exact: shift into the high half. */
static inline svfloat32_t load_bf(svbool_t pg, const uint16_t *p)
{
    return ln_sve_src(pg, p, NULL, NULL, 0, 1, 0, 0);
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

#define LN_ALWAYS_INLINE static inline __attribute__((always_inline))

LN_ALWAYS_INLINE void forward_rows(const ln_bf16_fwd_args *a, size_t r0, size_t r1, int native)
{
    const size_t n = a->cols, w = svcntw();
    ln_sve_plan plan;
    ln_sve_plan_init(&plan, n);
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        float mean, rstd;
        ln_sve_row_stats(&plan, x, NULL, NULL, a->eps, &mean, &rstd, 1, 0, 0);
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
