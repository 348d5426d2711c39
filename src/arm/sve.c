/* sve.c - SVE kernels, vector-length agnostic: Welford statistics, centered apply and backward. */
#include <arm_sve.h>

#include "arm/arm_common.h"
#include "ln_internal.h"

#define LN_AI static inline __attribute__((always_inline))

/* The value normalized in the lanes of pg from column i: x, or s = x + res, stored to sum
   when asked (read before the store: sum may be res). */
LN_AI svfloat32_t src_v(svbool_t pg, const float *x, const float *res, float *sum, size_t i,
                        int hres, int hsum)
{
    svfloat32_t v = svld1_f32(pg, x + i);
    if (hres) {
        v = svadd_f32_x(pg, v, svld1_f32(pg, res + i));
        if (hsum)
            svst1_f32(pg, sum + i, v);
    }
    return v;
}

/* One Welford step of one accumulator with the broadcast reciprocal r of its step count;
   predicated so a partial last vector leaves the inactive lanes alone. */
LN_AI void welford(svbool_t pg, svfloat32_t v, float r, svfloat32_t *m, svfloat32_t *s)
{
    const svfloat32_t d = svsub_f32_x(pg, v, *m);
    *m = svmla_n_f32_m(pg, *m, d, r);
    *s = svmla_f32_m(pg, *s, d, svsub_f32_x(pg, v, *m));
}

/*
 * Chan's merge of partials (na, ma, sa) += (nb, mb, sb), lane by lane; counts differ per
 * lane after a partial tail vector and may be 0. An empty side passes the other through
 * unchanged, so a constant row keeps mean == x and M2 == 0 exactly.
 */
LN_AI void chan(svbool_t pt, svfloat32_t *na, svfloat32_t *ma, svfloat32_t *sa, svfloat32_t nb,
                svfloat32_t mb, svfloat32_t sb)
{
    const svfloat32_t n = svadd_f32_x(pt, *na, nb), d = svsub_f32_x(pt, mb, *ma);
    const svfloat32_t f = svdiv_f32_z(svcmpgt_n_f32(pt, n, 0.0f), nb, n);
    svfloat32_t m = svmla_f32_x(pt, *ma, d, f);
    svfloat32_t s = svmla_f32_x(pt, svadd_f32_x(pt, *sa, sb), svmul_f32_x(pt, d, *na),
                                svmul_f32_x(pt, d, f));
    const svbool_t a0 = svcmpeq_n_f32(pt, *na, 0.0f), b0 = svcmpeq_n_f32(pt, nb, 0.0f);
    m = svsel_f32(a0, mb, svsel_f32(b0, *ma, m));
    s = svsel_f32(a0, sb, svsel_f32(b0, *sa, s));
    *na = n;
    *ma = m;
    *sa = s;
}

/* Blocks of the main statistics loop: four vectors, one per accumulator. */
static inline size_t stat_blocks(size_t n) { return n / (4 * svcntw()); }

/* RMSNorm's statistics: the mean square (two accumulators, the tail predicated into the
   first, then FADDV); mean is 0, so the shared apply computes x * (rstd * gamma) + beta. */
LN_AI void row_ms(const float *x, const float *res, float *sum, size_t n, float eps,
                  float *mean, float *rstd, int hres, int hsum)
{
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw();
    svfloat32_t s0 = svdup_n_f32(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        const svfloat32_t v0 = src_v(pt, x, res, sum, i, hres, hsum);
        const svfloat32_t v1 = src_v(pt, x, res, sum, i + vl, hres, hsum);
        s0 = svmla_f32_x(pt, s0, v0, v0);
        s1 = svmla_f32_x(pt, s1, v1, v1);
    }
    for (; i < n; i += vl) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        const svfloat32_t v = src_v(pg, x, res, sum, i, hres, hsum);
        s0 = svmla_f32_m(pg, s0, v, v);
    }
    const float ss = svaddv_f32(pt, svadd_f32_x(pt, s0, s1));
    *mean = 0.0f;
    *rstd = (float)(1.0 / sqrt((double)ss / (double)n + (double)eps));
}

/* One row's statistics in one pass (storing s = x + res on the way when asked). */
LN_AI void row_stats(const float *x, const float *res, float *sum, size_t n, float eps,
                     const float *tab0, float *mean, float *rstd, int rms, int hres, int hsum)
{
    if (rms) {
        row_ms(x, res, sum, n, eps, mean, rstd, hres, hsum);
        return;
    }
    const svbool_t pt = svptrue_b32();
    const size_t vl = svcntw(), blk = 4 * vl, nb = stat_blocks(n);
    const svfloat32_t zero = svdup_n_f32(0.0f);
    /* Four accumulators: the sub -> fma -> sub -> fma chain of one would bound the loop. */
    svfloat32_t m0 = zero, m1 = zero, m2 = zero, m3 = zero;
    svfloat32_t s0 = zero, s1 = zero, s2 = zero, s3 = zero;
    float tab[LN_ARM_RTAB];
    size_t i = 0;
    for (size_t b0 = 0; b0 < nb; b0 += LN_ARM_RTAB) {
        size_t len;
        const float *r = ln_arm_recip_chunk(tab0, tab, b0, nb, &len);
        for (size_t k = 0; k < len; k++, i += blk) {
            welford(pt, src_v(pt, x, res, sum, i, hres, hsum), r[k], &m0, &s0);
            welford(pt, src_v(pt, x, res, sum, i + vl, hres, hsum), r[k], &m1, &s1);
            welford(pt, src_v(pt, x, res, sum, i + 2 * vl, hres, hsum), r[k], &m2, &s2);
            welford(pt, src_v(pt, x, res, sum, i + 3 * vl, hres, hsum), r[k], &m3, &s3);
        }
    }
    /* The tail (< 4 vectors): vector k takes accumulator k's step nb + 1 in the lanes it
       covers, so each lane's count is nb or nb + 1. */
    const float rt = 1.0f / (float)(nb + 1);
    const svfloat32_t cnb = svdup_n_f32((float)nb);
    const svbool_t p0 = svwhilelt_b32_u64(i, n), p1 = svwhilelt_b32_u64(i + vl, n);
    const svbool_t p2 = svwhilelt_b32_u64(i + 2 * vl, n), p3 = svwhilelt_b32_u64(i + 3 * vl, n);
    welford(p0, src_v(p0, x, res, sum, i, hres, hsum), rt, &m0, &s0);
    welford(p1, src_v(p1, x, res, sum, i + vl, hres, hsum), rt, &m1, &s1);
    welford(p2, src_v(p2, x, res, sum, i + 2 * vl, hres, hsum), rt, &m2, &s2);
    welford(p3, src_v(p3, x, res, sum, i + 3 * vl, hres, hsum), rt, &m3, &s3);
    svfloat32_t c0 = svadd_n_f32_m(p0, cnb, 1.0f), c1 = svadd_n_f32_m(p1, cnb, 1.0f);
    svfloat32_t c2 = svadd_n_f32_m(p2, cnb, 1.0f), c3 = svadd_n_f32_m(p3, cnb, 1.0f);

    /* Fixed order: accumulators (0,1) (2,3), the pair, then lanes pairwise (2i, 2i+1)
       until one is left; lanes past the live width are emptied so any length works. */
    chan(pt, &c0, &m0, &s0, c1, m1, s1);
    chan(pt, &c2, &m2, &s2, c3, m3, s3);
    chan(pt, &c0, &m0, &s0, c2, m2, s2);
    for (size_t w = vl; w > 1;) {
        svfloat32_t cn = svuzp1_f32(c0, c0), mn = svuzp1_f32(m0, m0), sn = svuzp1_f32(s0, s0);
        chan(pt, &cn, &mn, &sn, svuzp2_f32(c0, c0), svuzp2_f32(m0, m0), svuzp2_f32(s0, s0));
        w = (w + 1) / 2;
        const svbool_t live = svwhilelt_b32_u64(0, w);
        c0 = svsel_f32(live, cn, zero);
        m0 = svsel_f32(live, mn, zero);
        s0 = svsel_f32(live, sn, zero);
    }
    const svbool_t first = svptrue_pat_b32(SV_VL1);
    ln_arm_finish((double)n, svlastb_f32(first, m0), svlastb_f32(first, s0), 0.0, 0.0, 0.0,
                  eps, mean, rstd);
}

/* y = (v - mean) * (rstd * gamma) + beta, v = src (+ res when hadd: the residual sum was
   not stored, so it is formed again, with the same single rounding). */
LN_AI svfloat32_t apply_v(svbool_t pg, const float *src, const float *res, const float *g,
                          const float *b, size_t i, svfloat32_t vm, svfloat32_t vr, int hg,
                          int hb, int hadd)
{
    const svfloat32_t xm = svsub_f32_x(pg, src_v(pg, src, res, NULL, i, hadd, 0), vm);
    const svfloat32_t w = hg ? svmul_f32_x(pg, svld1_f32(pg, g + i), vr) : vr;
    return hb ? svmla_f32_x(pg, svld1_f32(pg, b + i), xm, w) : svmul_f32_x(pg, xm, w);
}

LN_AI void apply_row(const float *src, const float *res, const float *g, const float *b,
                     float *y, size_t n, float mean, float rstd, int hg, int hb, int hadd)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t vm = svdup_n_f32(mean), vr = svdup_n_f32(rstd);
    const size_t vl = svcntw();
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        /* Both loads before either store: y may be x. */
        const svfloat32_t y0 = apply_v(pt, src, res, g, b, i, vm, vr, hg, hb, hadd);
        const svfloat32_t y1 = apply_v(pt, src, res, g, b, i + vl, vm, vr, hg, hb, hadd);
        svst1_f32(pt, y + i, y0);
        svst1_f32(pt, y + i + vl, y1);
    }
    for (; i < n; i += vl) {
        const svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_f32(pg, y + i, apply_v(pg, src, res, g, b, i, vm, vr, hg, hb, hadd));
    }
}

/* Reduce pass for one vector: the sums dx needs (merging, so a partial vector adds 0
   lanes' worth of nothing), and this block's dgamma/dbeta partials. */
LN_AI void reduce_v(svbool_t pg, const float *dy, const float *x, const float *g, float *dgp,
                    float *dbp, size_t i, svfloat32_t vm, svfloat32_t vr, svfloat32_t *sg,
                    svfloat32_t *sgx, int hg, int wdx, int wdg, int wdb)
{
    /* Base pointers and an index: an absent (NULL) operand is never offset. */
    const svfloat32_t d = svld1_f32(pg, dy + i);
    const svfloat32_t xh = svmul_f32_x(pg, svsub_f32_x(pg, svld1_f32(pg, x + i), vm), vr);
    if (wdx) {
        const svfloat32_t gv = hg ? svmul_f32_x(pg, d, svld1_f32(pg, g + i)) : d;
        *sg = svadd_f32_m(pg, *sg, gv);
        *sgx = svmla_f32_m(pg, *sgx, gv, xh);
    }
    if (wdg)
        svst1_f32(pg, dgp + i, svmla_f32_x(pg, svld1_f32(pg, dgp + i), d, xh));
    if (wdb)
        svst1_f32(pg, dbp + i, svadd_f32_x(pg, svld1_f32(pg, dbp + i), d));
}

/* dx = rstd * (g - mean(g) - (x - mean) * a), a = rstd * mean(g xhat), added to dx when
   accumulating; loads, then the store (dx may be dy). */
LN_AI void dx_v(svbool_t pg, const float *dy, const float *x, const float *g, float *dx,
                size_t i, svfloat32_t vm, svfloat32_t vr, svfloat32_t vmg, svfloat32_t va,
                int hg, int wacc)
{
    const svfloat32_t xm = svsub_f32_x(pg, svld1_f32(pg, x + i), vm);
    const svfloat32_t d = svld1_f32(pg, dy + i);
    const svfloat32_t gv = hg ? svmul_f32_x(pg, d, svld1_f32(pg, g + i)) : d;
    const svfloat32_t v =
        svmul_f32_x(pg, svmls_f32_x(pg, svsub_f32_x(pg, gv, vmg), xm, va), vr);
    svst1_f32(pg, dx + i, wacc ? svadd_f32_x(pg, svld1_f32(pg, dx + i), v) : v);
}

/* One row: the reduce pass (dgamma/dbeta partials, and the sums dx needs), then dx.
   RMSNorm passes mean = 0 and centered = 0 (no mean(g) term). */
LN_AI void bwd_row(const float *dy, const float *x, const float *g, float *dx,
                   float *restrict dgp, float *restrict dbp, size_t n, float mean, float rstd,
                   int centered, int hg, int wdx, int wdg, int wdb, int wacc)
{
    const svbool_t pt = svptrue_b32();
    const svfloat32_t vm = svdup_n_f32(mean), vr = svdup_n_f32(rstd);
    const size_t vl = svcntw();
    svfloat32_t sg0 = svdup_n_f32(0.0f), sg1 = sg0, sgx0 = sg0, sgx1 = sg0;
    size_t i = 0;
    for (; i + 2 * vl <= n; i += 2 * vl) {
        reduce_v(pt, dy, x, g, dgp, dbp, i, vm, vr, &sg0, &sgx0, hg, wdx, wdg, wdb);
        reduce_v(pt, dy, x, g, dgp, dbp, i + vl, vm, vr, &sg1, &sgx1, hg, wdx, wdg, wdb);
    }
    for (; i < n; i += vl)
        reduce_v(svwhilelt_b32_u64(i, n), dy, x, g, dgp, dbp, i, vm, vr, &sg0, &sgx0, hg, wdx,
                 wdg, wdb);
    if (!wdx)
        return;
    /* Fixed order: accumulator 0 + 1, then FADDV's architected lane tree. */
    const float sum_g = svaddv_f32(pt, svadd_f32_x(pt, sg0, sg1));
    const float sum_gx = svaddv_f32(pt, svadd_f32_x(pt, sgx0, sgx1));
    const float mg = centered ? sum_g / (float)n : 0.0f, a = rstd * (sum_gx / (float)n);
    const svfloat32_t vmg = svdup_n_f32(mg), va = svdup_n_f32(a);
    for (i = 0; i + 2 * vl <= n; i += 2 * vl) {
        dx_v(pt, dy, x, g, dx, i, vm, vr, vmg, va, hg, wacc);
        dx_v(pt, dy, x, g, dx, i + vl, vm, vr, vmg, va, hg, wacc);
    }
    for (; i < n; i += vl)
        dx_v(svwhilelt_b32_u64(i, n), dy, x, g, dx, i, vm, vr, vmg, va, hg, wacc);
}

#include "arm/arm_drivers.h"

void ln_forward_sve(const ln_fwd_args *a, size_t r0, size_t r1) { ln_arm_forward(a, r0, r1); }

void ln_backward_sve(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    ln_arm_backward(a, r0, r1, dg, db);
}
