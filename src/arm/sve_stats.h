/* sve_stats.h - the SVE Welford statistics pass (float and bf16 rows) on the shared plan. */
#ifndef LN_SVE_STATS_H
#define LN_SVE_STATS_H

/*
 * The fixed-width kernels' statistics (kernels/ bodies, on AVX2, AVX-512 and NEON) with
 * SVE's runtime width: the values shifted by the row's first value, LN_SVE_K accumulators
 * in blocks, the leftover full vectors, the tail as a one-value partial per lane, then the
 * accumulators and lanes merged in a fixed order with coefficients that depend only on
 * cols and the vector length, computed once per call (no divide per merge), and the row
 * finished in float. SVE's sizeless vectors cannot live in arrays or structs, which the
 * shared bodies keep their accumulators in, so the loop is written out here; the plan's
 * coefficients come from the same functions (kernels/plan.h) for the same counts and
 * merge order.
 */
#include <arm_sve.h>
#include <math.h>

#include "arm/arm_common.h"
#include "bf16.h"
#include "kernels/plan.h"

#define LN_SVE_AI static inline __attribute__((always_inline))
/* Accumulators: the sub -> fma -> sub -> fma chain of one would bound the loop. */
#define LN_SVE_K 4
#define LN_SVE_MAXW 64   /* lanes of the largest vector, 2048 bits */
#define LN_SVE_LEVELS 6  /* halvings of 64 lanes */

typedef struct ln_sve_plan {
    size_t n, nv, nblk;        /* columns, full vectors, full blocks of LN_SVE_K vectors */
    unsigned rv, t, uniform;   /* vectors after the blocks, tail lanes, see lane_u */
    float acc_f1[LN_SVE_K - 1], acc_f2[LN_SVE_K - 1]; /* accumulators (0,1) (2,3) (0,2) */
    float tail_f1, tail_f2;    /* a tail lane's one value into its lane */
    /* Lane tree, level lv: lane l takes lane l + h, h = ceil(w/2) of the live width w.
       uniform (no tail, power-of-two width): every pair has equal counts, f1 = 1/2 and
       f2 = lane_u[lv]; otherwise per lane, 0 for lanes without a partner (a no-op). */
    float lane_u[LN_SVE_LEVELS];
    float lane_f1[LN_SVE_LEVELS][LN_SVE_MAXW], lane_f2[LN_SVE_LEVELS][LN_SVE_MAXW];
    float recip[LN_ARM_RTAB]; /* 1/(b+1) for the first blocks, shared by the call's rows */
} ln_sve_plan;

/* Per call: the counts each merge sees follow from n and the vector length alone. */
static inline void ln_sve_plan_init(ln_sve_plan *p, size_t n)
{
    const size_t vl = svcntw();
    p->n = n;
    p->nv = n / vl;
    p->nblk = p->nv / LN_SVE_K;
    p->rv = (unsigned)(p->nv % LN_SVE_K);
    p->t = (unsigned)(n % vl);
    ln_arm_fill_recip(p->recip, 1, p->nblk);
    ln_plan_acc(p->nblk, p->rv, LN_SVE_K, p->acc_f1, p->acc_f2);
    chan_coef((double)p->nv, 1.0, &p->tail_f1, &p->tail_f2);
    p->uniform = p->t == 0 && (vl & (vl - 1)) == 0;
    ln_plan_lane_u(p->nv, LN_SVE_LEVELS, p->lane_u);
    if (!p->uniform)
        ln_plan_lanes(p->nv, p->t, (unsigned)vl, &p->lane_f1[0][0], &p->lane_f2[0][0],
                      LN_SVE_MAXW);
}

/* The statistics' source in the lanes of pg at column i: a float row (x, or s = x + res
   stored to sum when asked, read before the store: sum may be res) or a bf16 row widened
   (exact). Arithmetic on all lanes: inactive ones load 0 and stay finite. */
LN_SVE_AI svfloat32_t ln_sve_src(svbool_t pg, const void *x, const float *res, float *sum,
                                 size_t i, int bf, int hres, int hsum)
{
    const svbool_t pt = svptrue_b32();
    if (bf)
        return svreinterpret_f32_u32(
            svlsl_n_u32_x(pt, svld1uh_u32(pg, (const uint16_t *)x + i), 16));
    svfloat32_t v = svld1_f32(pg, (const float *)x + i);
    if (hres) {
        v = svadd_f32_x(pt, v, svld1_f32(pg, res + i));
        if (hsum)
            svst1_f32(pg, sum + i, v);
    }
    return v;
}

/* One Welford step of every lane with the broadcast reciprocal r of the step count. */
LN_SVE_AI void ln_sve_welford(svfloat32_t xs, float r, svfloat32_t *m, svfloat32_t *q)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t d = svsub_f32_x(pt, xs, *m);
    *m = svmla_n_f32_x(pt, *m, d, r);
    *q = svmla_f32_x(pt, *q, d, svsub_f32_x(pt, xs, *m));
}

/* Chan's merge with ready coefficients, d*(d*f2) as in the shared bodies: an empty
   partner (f1 = f2 = 0) is a no-op even where d*d would overflow. */
LN_SVE_AI void ln_sve_merge(svfloat32_t *ma, svfloat32_t *qa, svfloat32_t mb, svfloat32_t qb,
                            svfloat32_t f1, svfloat32_t f2)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t d = svsub_f32_x(pt, mb, *ma);
    *ma = svmla_f32_x(pt, *ma, d, f1);
    *qa = svmla_f32_x(pt, svadd_f32_x(pt, *qa, qb), svmul_f32_x(pt, d, f2), d);
}

/* Source vector at column i shifted by s (all lanes active). */
#define LN_SVE_XS(i) svsub_f32_x(pt, ln_sve_src(pt, x, res, sum, (i), bf, hres, hsum), s)

/* Mean and rstd of one row (bf: x is bf16, no residual). Range and shift as in the
   shared bodies: every M2 and product stays below FLT_MAX for rows in the documented
   range, and nothing squares an unshifted x. */
LN_SVE_AI void ln_sve_row_stats(const ln_sve_plan *p, const void *x, const float *res,
                                float *sum, float eps, float *mean, float *rstd, int bf,
                                int hres, int hsum)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw(), blk = LN_SVE_K * vl;
    /* The first value, read before the pass stores s over a residual that is also sum. */
    const float s0 = bf ? ln_bf16_to_f32(*(const uint16_t *)x)
                        : ((const float *)x)[0] + (hres ? res[0] : 0.0f);
    const svfloat32_t s = svdup_n_f32(s0), zero = svdup_n_f32(0.0f);
    svfloat32_t m0 = zero, m1 = zero, m2 = zero, m3 = zero;
    svfloat32_t q0 = zero, q1 = zero, q2 = zero, q3 = zero;
    float tab[LN_ARM_RTAB];
    size_t i = 0;
    for (size_t b0 = 0; b0 < p->nblk; b0 += LN_ARM_RTAB) {
        size_t len;
        const float *r = ln_arm_recip_chunk(p->recip, tab, b0, p->nblk, &len);
        for (size_t k = 0; k < len; k++, i += blk) {
            ln_sve_welford(LN_SVE_XS(i), r[k], &m0, &q0);
            ln_sve_welford(LN_SVE_XS(i + vl), r[k], &m1, &q1);
            ln_sve_welford(LN_SVE_XS(i + 2 * vl), r[k], &m2, &q2);
            ln_sve_welford(LN_SVE_XS(i + 3 * vl), r[k], &m3, &q3);
        }
    }
    if (p->rv) { /* the full vectors after the blocks: accumulators 0 .. rv-1 */
        const float rc = 1.0f / (float)(p->nblk + 1);
        ln_sve_welford(LN_SVE_XS(i), rc, &m0, &q0);
        if (p->rv > 1)
            ln_sve_welford(LN_SVE_XS(i + vl), rc, &m1, &q1);
        if (p->rv > 2)
            ln_sve_welford(LN_SVE_XS(i + 2 * vl), rc, &m2, &q2);
    }
    ln_sve_merge(&m0, &q0, m1, q1, svdup_n_f32(p->acc_f1[0]), svdup_n_f32(p->acc_f2[0]));
    ln_sve_merge(&m2, &q2, m3, q3, svdup_n_f32(p->acc_f1[1]), svdup_n_f32(p->acc_f2[1]));
    ln_sve_merge(&m0, &q0, m2, q2, svdup_n_f32(p->acc_f1[2]), svdup_n_f32(p->acc_f2[2]));
    if (p->t) { /* lanes past the row load 0 (-s after the shift, finite), f1 = f2 = 0 */
        const svbool_t pg = svwhilelt_b32_u64(p->nv * vl, p->n);
        const svfloat32_t xs = svsub_f32_x(
            pt, ln_sve_src(pg, x, res, sum, p->nv * vl, bf, hres, hsum), s);
        ln_sve_merge(&m0, &q0, xs, zero, svdup_n_f32_z(pg, p->tail_f1),
                     svdup_n_f32_z(pg, p->tail_f2));
    }
    unsigned lv = 0;
    for (size_t w = vl; w > 1; lv++) {
        const size_t h = (w + 1) / 2;
        /* Lane l + h into lane l for l < w - h; the others take an empty partner. */
        const svbool_t pp = svwhilelt_b32_u64(0, w - h);
        const svuint32_t idx = svindex_u32((uint32_t)h, 1);
        const svfloat32_t mb = svsel_f32(pp, svtbl_f32(m0, idx), zero);
        const svfloat32_t qb = svsel_f32(pp, svtbl_f32(q0, idx), zero);
        if (p->uniform)
            ln_sve_merge(&m0, &q0, mb, qb, svdup_n_f32(0.5f), svdup_n_f32(p->lane_u[lv]));
        else
            ln_sve_merge(&m0, &q0, mb, qb, svld1_f32(pt, p->lane_f1[lv]),
                         svld1_f32(pt, p->lane_f2[lv]));
        w = h;
    }
    /* Correctly rounded divide and sqrt, in float as the fixed-width kernels do. */
    const svbool_t first = svptrue_pat_b32(SV_VL1);
    const float var = svlastb_f32(first, q0) / (float)p->n;
    *mean = s0 + svlastb_f32(first, m0);
    *rstd = 1.0f / sqrtf(var + eps);
}

#undef LN_SVE_XS

#endif /* LN_SVE_STATS_H */
