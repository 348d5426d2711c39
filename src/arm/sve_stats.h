/* sve_stats.h - the SVE Welford statistics pass (float and bf16 rows) on the shared plan. */
#ifndef LN_SVE_STATS_H
#define LN_SVE_STATS_H

/*
 * The fixed-width kernels' statistics (kernels/ bodies, on AVX2, AVX-512 and NEON) with
 * SVE's runtime width: the values shifted by each lane's first value, LN_SVE_K accumulators
 * in blocks, the leftover full vectors, the tail as a one-value partial per lane, then the
 * accumulators and lanes merged in a fixed order with coefficients that depend only on
 * cols and the vector length, computed once per call (no divide per merge). SVE's
 * sizeless vectors cannot live in arrays or structs, which the shared bodies keep their
 * accumulators in, so the loop is written out here; the plan's
 * coefficients come from the same functions (kernels/plan.h) for the same counts and
 * merge order. rstd is taken from M2 in double (kernels/plan.h, ln_rstd_of).
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

/* Chan's merge of lanes kept as shift + mean (kernels/ln_forward.h's chan_merge): d from
   the small parts, d*(d*f2) so an empty partner (f1 = f2 = 0) is a no-op. */
LN_SVE_AI void ln_sve_merge(svfloat32_t sa, svfloat32_t *ma, svfloat32_t *qa, svfloat32_t sb,
                            svfloat32_t mb, svfloat32_t qb, svfloat32_t f1, svfloat32_t f2)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t d = svadd_f32_x(pt, svsub_f32_x(pt, sb, sa), svsub_f32_x(pt, mb, *ma));
    *ma = svmla_f32_x(pt, *ma, d, f1);
    *qa = svmla_f32_x(pt, svadd_f32_x(pt, *qa, qb), svmul_f32_x(pt, d, f2), d);
}

/* The lane's running mean moved into its shift exactly (two-sum), as ln_recenter does. */
LN_SVE_AI void ln_sve_recenter(svfloat32_t *s, svfloat32_t *m)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t t = svadd_f32_x(pt, *s, *m), bb = svsub_f32_x(pt, t, *s);
    *m = svadd_f32_x(pt, svsub_f32_x(pt, *s, svsub_f32_x(pt, t, bb)), svsub_f32_x(pt, *m, bb));
    *s = t;
}

/* A piece added to a compensated sum (ln_kahan_add): the sum is *sum - *c. */
LN_SVE_AI void ln_sve_kahan_add(svfloat32_t *sum, svfloat32_t *c, svfloat32_t piece)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t y = svsub_f32_x(pt, piece, *c), t = svadd_f32_x(pt, *sum, y);
    *c = svsub_f32_x(pt, svsub_f32_x(pt, t, *sum), y);
    *sum = t;
}

/* Re-centering, with M2's running piece moved into the pieces' compensated sum (see
   row_stats). */
#define LN_SVE_RC(j)                                                                      \
    do {                                                                                  \
        ln_sve_recenter(&s##j, &m##j);                                                    \
        ln_sve_kahan_add(&qo##j, &qc##j, q##j);                                           \
        q##j = zero;                                                                      \
    } while (0)

/* Source vector at column i shifted by accumulator j's shift (all lanes active). */
#define LN_SVE_XS(i, j) svsub_f32_x(pt, ln_sve_src(pt, x, res, sum, (i), bf, hres, hsum), s##j)

static float ln_sve_get_f32(const void *p, const void *q, size_t i)
{
    const float v = ((const float *)p)[i];
    return q ? v + ((const float *)q)[i] : v;
}

static float ln_sve_get_bf16(const void *p, const void *q, size_t i)
{
    (void)q;
    return ln_bf16_to_f32(((const uint16_t *)p)[i]);
}

/* Mean (as mean + dmean), rstd of one row (bf: x is bf16, no residual): the shared
   bodies' row_stats (kernels/ln_forward.h) with SVE's width -- per-lane shifts re-centered
   after blocks 1, 4 and every LN_RECENTER, M2 summed in pieces, every merge from
   re-centered partners, a row out of the float range redone in double. */
LN_SVE_AI void ln_sve_row_stats_c(const ln_sve_plan *p, const void *x, const float *res,
                                  float *sum, float eps, float *mean, float *dmean,
                                  float *rstd, int bf, int hres, int hsum)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw(), blk = LN_SVE_K * vl;
    /* Shifts start at 0: block 0's Welford step and re-centering then take each lane's
       first value as its shift exactly (x - 0, then 0 + x), as the fixed-width bodies'
       block 0 does (kernels/ln_forward.h, row_stats). */
    const svfloat32_t zero = svdup_n_f32(0.0f);
    svfloat32_t s0 = zero, s1 = zero, s2 = zero, s3 = zero;
    svfloat32_t m0 = zero, m1 = zero, m2 = zero, m3 = zero;
    svfloat32_t q0 = zero, q1 = zero, q2 = zero, q3 = zero;
    svfloat32_t qo0 = zero, qo1 = zero, qo2 = zero, qo3 = zero;
    svfloat32_t qc0 = zero, qc1 = zero, qc2 = zero, qc3 = zero;
    float tab[LN_ARM_RTAB];
    size_t i = 0;
    for (size_t b0 = 0; b0 < p->nblk; b0 += LN_ARM_RTAB) {
        size_t len;
        const float *r = ln_arm_recip_chunk(p->recip, tab, b0, p->nblk, &len);
        for (size_t k = 0; k < len; k++, i += blk) {
            ln_sve_welford(LN_SVE_XS(i, 0), r[k], &m0, &q0);
            ln_sve_welford(LN_SVE_XS(i + vl, 1), r[k], &m1, &q1);
            ln_sve_welford(LN_SVE_XS(i + 2 * vl, 2), r[k], &m2, &q2);
            ln_sve_welford(LN_SVE_XS(i + 3 * vl, 3), r[k], &m3, &q3);
            if (ln_recenter_after(b0 + k)) {
                LN_SVE_RC(0);
                LN_SVE_RC(1);
                LN_SVE_RC(2);
                LN_SVE_RC(3);
            }
        }
    }
    if (p->rv) { /* the full vectors after the blocks: accumulators 0 .. rv-1 */
        const float rc = 1.0f / (float)(p->nblk + 1);
        ln_sve_welford(LN_SVE_XS(i, 0), rc, &m0, &q0);
        if (p->rv > 1)
            ln_sve_welford(LN_SVE_XS(i + vl, 1), rc, &m1, &q1);
        if (p->rv > 2)
            ln_sve_welford(LN_SVE_XS(i + 2 * vl, 2), rc, &m2, &q2);
    }
    LN_SVE_RC(0);
    LN_SVE_RC(1);
    LN_SVE_RC(2);
    LN_SVE_RC(3);
    qo0 = svsub_f32_x(pt, qo0, qc0);
    qo1 = svsub_f32_x(pt, qo1, qc1);
    qo2 = svsub_f32_x(pt, qo2, qc2);
    qo3 = svsub_f32_x(pt, qo3, qc3);
    ln_sve_merge(s0, &m0, &qo0, s1, m1, qo1, svdup_n_f32(p->acc_f1[0]), svdup_n_f32(p->acc_f2[0]));
    ln_sve_recenter(&s0, &m0);
    ln_sve_merge(s2, &m2, &qo2, s3, m3, qo3, svdup_n_f32(p->acc_f1[1]), svdup_n_f32(p->acc_f2[1]));
    ln_sve_recenter(&s2, &m2);
    ln_sve_merge(s0, &m0, &qo0, s2, m2, qo2, svdup_n_f32(p->acc_f1[2]), svdup_n_f32(p->acc_f2[2]));
    ln_sve_recenter(&s0, &m0);
    if (p->t) { /* a tail lane's value v: the partner (shift v, mean 0, M2 0); lanes past
                   the row load 0 (finite) and have f1 = f2 = 0 */
        const svbool_t pg = svwhilelt_b32_u64(p->nv * vl, p->n);
        ln_sve_merge(s0, &m0, &qo0, ln_sve_src(pg, x, res, sum, p->nv * vl, bf, hres, hsum),
                     zero, zero, svdup_n_f32_z(pg, p->tail_f1), svdup_n_f32_z(pg, p->tail_f2));
        ln_sve_recenter(&s0, &m0);
    }
    unsigned lv = 0;
    for (size_t w = vl; w > 1; lv++) {
        const size_t h = (w + 1) / 2;
        /* Lane l + h into lane l for l < w - h; the others take an empty partner. */
        const svbool_t pp = svwhilelt_b32_u64(0, w - h);
        const svuint32_t idx = svindex_u32((uint32_t)h, 1);
        const svfloat32_t sb = svsel_f32(pp, svtbl_f32(s0, idx), s0);
        const svfloat32_t mb = svsel_f32(pp, svtbl_f32(m0, idx), zero);
        const svfloat32_t qb = svsel_f32(pp, svtbl_f32(qo0, idx), zero);
        if (p->uniform)
            ln_sve_merge(s0, &m0, &qo0, sb, mb, qb, svdup_n_f32(0.5f), svdup_n_f32(p->lane_u[lv]));
        else
            ln_sve_merge(s0, &m0, &qo0, sb, mb, qb, svld1_f32(pt, p->lane_f1[lv]),
                         svld1_f32(pt, p->lane_f2[lv]));
        ln_sve_recenter(&s0, &m0);
        w = h;
    }
    /* rstd from M2 as the fixed-width kernels take it (kernels/plan.h). */
    const svbool_t first = svptrue_pat_b32(SV_VL1);
    const float m2f = svlastb_f32(first, qo0);
    ln_two_sum(svlastb_f32(first, s0), svlastb_f32(first, m0), mean, dmean);
    *rstd = ln_rstd_of(m2f, p->n, eps);
    if (ln_stats_out_of_range(m2f, p->n, eps))
        ln_rescue_row(bf ? ln_sve_get_bf16 : ln_sve_get_f32, hsum ? (const void *)sum : x,
                      hres && !hsum ? res : NULL, p->n, 0, eps, mean, dmean, rstd);
}

/* Mean and rstd only (the bf16 kernel centers on the float mean: its outputs round to
   8 bits, far coarser than the mean's remainder). */
LN_SVE_AI void ln_sve_row_stats(const ln_sve_plan *p, const void *x, const float *res,
                                float *sum, float eps, float *mean, float *rstd, int bf,
                                int hres, int hsum)
{
    float dmean;
    ln_sve_row_stats_c(p, x, res, sum, eps, mean, &dmean, rstd, bf, hres, hsum);
}

#undef LN_SVE_RC
#undef LN_SVE_XS

#endif /* LN_SVE_STATS_H */
