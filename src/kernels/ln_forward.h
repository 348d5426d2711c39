/* ln_forward.h - the LayerNorm / RMSNorm forward body (with the fused residual add), over
   the vocabulary of ln_common.h. */
#ifndef LN_KERNELS_FORWARD_H
#define LN_KERNELS_FORWARD_H

#include "kernels/ln_common.h"

LN_INLINE void welford_step(V *m, V *q, V xs, V rc)
{
    const V d = v_sub(xs, *m);
    *m = v_fma(d, rc, *m);
    *q = v_fma(d, v_sub(xs, *m), *q);
}

LN_INLINE void chan_merge(V *ma, V *qa, V mb, V qb, V f1, V f2)
{
    const V d = v_sub(mb, *ma);
    *ma = v_fma(d, f1, *ma);
    *qa = v_fma(v_mul(d, f2), d, v_add(*qa, qb));
}

/*
 * Where a row's values come from: x, or s = x + residual (float addition) when `resid`;
 * s is then stored to sum (if given) by the statistics pass, and the apply pass reads it
 * back from there (sum may be the residual itself, already overwritten).
 */
typedef struct ln_src {
    const LN_ELEM *x, *res;
    LN_ELEM *sum;
    size_t ld;
} ln_src;

LN_INLINE V src_vec(const ln_src *s, size_t off, int tail, VM tm, int resid)
{
    V v = eload_t(s->x + off, tail, tm);
    if (resid) {
        v = v_add(v, eload_t(s->res + off, tail, tm));
        if (s->sum)
            estore_t(s->sum + off, v, tail, tm);
    }
    return v;
}

/* y = (v - mean) * (rstd * gamma) + beta, centered: a constant row gives 0 * s + beta.
   v is x[i], or x[i] + r2[i] when `two` (the residual not stored anywhere). */
LN_INLINE V apply_one(const LN_ELEM *x, const LN_ELEM *r2, const float *g, const float *b,
                      size_t i, VM tm, int tail, V mv, V rs, int hg, int hb, int two)
{
    V v = eload_t(x + i, tail, tm);
    if (two)
        v = v_add(v, eload_t(r2 + i, tail, tm));
    const V c = v_sub(v, mv);
    const V sc = hg ? v_mul(rs, load_t(g + i, tail, tm)) : rs;
    if (hb)
        return v_fma(c, sc, load_t(b + i, tail, tm));
    return v_mul(c, sc);
}


/*
 * The apply pass of the previous row, riding along the statistics pass of the next one
 * (forward_pipelined): the statistics are bound by floating-point throughput, the apply
 * by loads and stores, so together they cost little more than either. Only the
 * instruction order changes; every row's operations are those of the separate passes.
 */
typedef struct ln_fuse {
    const LN_ELEM *x[LN_RMAX];
    const float *g, *b;
    LN_ELEM *y[LN_RMAX];
    V mv[LN_RMAX], rs[LN_RMAX];
} ln_fuse;

LN_INLINE void fuse_vec(const ln_fuse *f, unsigned R, size_t i, int tail, VM tm)
{
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
        estore_t(f->y[r] + i,
                apply_one(f->x[r], NULL, f->g, f->b, i, tm, tail, f->mv[r], f->rs[r], 1, 1, 0),
                tail, tm);
}

/* Two full vectors at i and i + LN_W, stored as a pair (bf16 packs them into one store). */
LN_INLINE void fuse_vec2(const ln_fuse *f, unsigned R, size_t i, VM tm)
{
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        const V y0 = apply_one(f->x[r], NULL, f->g, f->b, i, tm, 0, f->mv[r], f->rs[r], 1, 1, 0);
        const V y1 =
            apply_one(f->x[r], NULL, f->g, f->b, i + LN_W, tm, 0, f->mv[r], f->rs[r], 1, 1, 0);
        e_store2(f->y[r] + i, y0, y1);
    }
}

/*
 * Mean and rstd of R rows with K accumulators each. The values are shifted by the row's
 * first value, so the running means stay near the spread instead of the offset (rows
 * with |mean| >> std keep their precision; a constant row stays exactly 0).
 * Each row's operations and their order depend only on cols and K, never on R: grouping
 * rows only interleaves independent instruction streams.
 * Range (layernorm.h: finite while |x_i - mean| < 1e19/sqrt(n)): every M2 is a sum of
 * squared deviations from a partial mean, at most n (1e19/sqrt(n))^2 = 1e38 < FLT_MAX,
 * and each product d*(d*f2) or d*(x - m) has |d| below twice the bound; the shifted
 * values x - x_0 are below twice the bound too. Nothing squares an unshifted x.
 */
LN_INLINE void row_stats(const ln_plan *p, const ln_src *src, unsigned R, unsigned K,
                         int resid, float eps, float *mean, float *rstd, const ln_fuse *fz)
{
    V m[LN_RMAX][LN_KMAX], q[LN_RMAX][LN_KMAX], s[LN_RMAX];
    float s0[LN_RMAX];
    const size_t ld = src->ld;
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        /* Read before the pass stores s over a residual that is also sum. */
        s0[r] = resid ? e_get(src->x + r * ld) + e_get(src->res + r * ld) : e_get(src->x + r * ld);
        s[r] = v_set1(s0[r]);
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            m[r][j] = q[r][j] = v_zero();
    }
    size_t off = 0;
    for (size_t b = 0; b < p->nblk; b++, off += K * LN_W) {
        const V rc = v_set1(ln_recip_of(b + 1));
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                welford_step(&m[r][j], &q[r][j],
                             v_sub(src_vec(src, off + r * ld + j * LN_W, 0, p->tmask, resid),
                                   s[r]), rc);
        if (fz)
#pragma GCC unroll 8
            for (unsigned j = 0; j < K; j += 2)
                fuse_vec2(fz, R, off + j * LN_W, p->tmask);
    }
    if (p->rv) {
        const V rc = v_set1(ln_recip_of(p->nblk + 1));
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            if (j < p->rv)
#pragma GCC unroll 4
                for (unsigned r = 0; r < R; r++)
                    welford_step(&m[r][j], &q[r][j],
                                 v_sub(src_vec(src, off + r * ld + j * LN_W, 0, p->tmask,
                                               resid), s[r]), rc);
    }
    if (fz) {
        for (size_t i = off; i < p->nv * LN_W; i += LN_W)
            fuse_vec(fz, R, i, 0, p->tmask);
        if (p->t)
            fuse_vec(fz, R, p->nv * LN_W, 1, p->tmask);
    }
    unsigned mi = 0;
#pragma GCC unroll 4
    for (unsigned st = 1; st < K; st *= 2)
#pragma GCC unroll 4
        for (unsigned j = 0; j + st < K; j += 2 * st, mi++) {
            const V f1 = v_set1(p->acc_f1[mi]), f2 = v_set1(p->acc_f2[mi]);
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                chan_merge(&m[r][j], &q[r][j], m[r][j + st], q[r][j + st], f1, f2);
        }
    if (p->t) {
        /* Masked-off lanes load 0 (then -s after the shift, finite) and have f1 = f2 = 0. */
        const V f1 = v_load(p->tail_f1), f2 = v_load(p->tail_f2);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            chan_merge(&m[r][0], &q[r][0],
                       v_sub(src_vec(src, p->nv * LN_W + r * ld, 1, p->tmask, resid), s[r]),
                       v_zero(), f1, f2);
    }
#pragma GCC unroll 4
    for (unsigned lv = 0; lv < LN_LOG2W; lv++) {
        const V f1 = p->t ? v_load(p->lane_f1[lv]) : v_set1(0.5f);
        const V f2 = p->t ? v_load(p->lane_f2[lv]) : v_set1(p->lane_u[lv]);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            chan_merge(&m[r][0], &q[r][0], v_fold(m[r][0], lv), v_fold(q[r][0], lv), f1, f2);
    }
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        /* Correctly rounded divide and sqrt: no reciprocal-sqrt estimate. */
        const float var = v_lane0(q[r][0]) / (float)p->n;
        mean[r] = s0[r] + v_lane0(m[r][0]);
        rstd[r] = 1.0f / sqrtf(var + eps);
    }
}

/* RMSNorm: the mean square from K accumulators per row, summed in a fixed tree. */
LN_INLINE void row_ms(const ln_plan *p, const ln_src *src, unsigned R, unsigned K, int resid,
                      float eps, float *mean, float *rstd)
{
    V q[LN_RMAX][LN_KMAX];
    const size_t ld = src->ld;
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            q[r][j] = v_zero();
    size_t off = 0;
    for (size_t b = 0; b < p->nblk; b++, off += K * LN_W)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++) {
                const V v = src_vec(src, off + r * ld + j * LN_W, 0, p->tmask, resid);
                q[r][j] = v_fma(v, v, q[r][j]);
            }
#pragma GCC unroll 8
    for (unsigned j = 0; j < K; j++)
        if (j < p->rv)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++) {
                const V v = src_vec(src, off + r * ld + j * LN_W, 0, p->tmask, resid);
                q[r][j] = v_fma(v, v, q[r][j]);
            }
    if (p->t)
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++) {
            const V v = src_vec(src, p->nv * LN_W + r * ld, 1, p->tmask, resid);
            q[r][0] = v_fma(v, v, q[r][0]);
        }
#pragma GCC unroll 4
    for (unsigned st = 1; st < K; st *= 2)
#pragma GCC unroll 4
        for (unsigned j = 0; j + st < K; j += 2 * st)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                q[r][j] = v_add(q[r][j], q[r][j + st]);
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        mean[r] = 0.0f;
        rstd[r] = 1.0f / sqrtf(hsum(q[r][0]) / (float)p->n + eps);
    }
}

LN_INLINE void apply_row_t(const ln_plan *p, const LN_ELEM *x, const LN_ELEM *r2, const float *g,
                           const float *b, LN_ELEM *y, float mean, float rstd, int hg, int hb,
                           int two)
{
    const V mv = v_set1(mean), rs = v_set1(rstd);
    const VM tm = p->tmask;
    const size_t n = p->n;
    size_t i = 0;
    for (; i + 4 * LN_W <= n; i += 4 * LN_W) {
        const V y0 = apply_one(x, r2, g, b, i, tm, 0, mv, rs, hg, hb, two);
        const V y1 = apply_one(x, r2, g, b, i + LN_W, tm, 0, mv, rs, hg, hb, two);
        const V y2 = apply_one(x, r2, g, b, i + 2 * LN_W, tm, 0, mv, rs, hg, hb, two);
        const V y3 = apply_one(x, r2, g, b, i + 3 * LN_W, tm, 0, mv, rs, hg, hb, two);
        e_store2(y + i, y0, y1);
        e_store2(y + i + 2 * LN_W, y2, y3);
    }
    for (; i + LN_W <= n; i += LN_W)
        e_store(y + i, apply_one(x, r2, g, b, i, tm, 0, mv, rs, hg, hb, two));
    if (i < n)
        e_storem(y + i, tm, apply_one(x, r2, g, b, i, tm, 1, mv, rs, hg, hb, two));
}

/* The NULL-gamma / NULL-beta cases get their own loops: no loads of implicit ones. */
static void apply_row(const ln_plan *p, const LN_ELEM *x, const LN_ELEM *r2, const float *g,
                      const float *b, LN_ELEM *y, float mean, float rstd)
{
    if (r2)
        apply_row_t(p, x, r2, g, b, y, mean, rstd, g != NULL, b != NULL, 1);
    else if (g && b)
        apply_row_t(p, x, r2, g, b, y, mean, rstd, 1, 1, 0);
    else if (g)
        apply_row_t(p, x, r2, g, b, y, mean, rstd, 1, 0, 0);
    else if (b)
        apply_row_t(p, x, r2, g, b, y, mean, rstd, 0, 1, 0);
    else
        apply_row_t(p, x, r2, g, b, y, mean, rstd, 0, 0, 0);
}

/* mode: bit 0 RMSNorm, bit 1 residual (constants per instantiation). */
LN_INLINE void forward_group(const ln_body_fwd_args *a, const ln_plan *p, size_t r, unsigned R,
                             unsigned K, unsigned mode)
{
    const int rms = mode & 1, resid = (mode & 2) != 0;
    const size_t ld = a->ldx;
    const ln_src src = {a->x + r * ld, resid ? a->residual + r * ld : NULL,
                        resid && a->sum ? a->sum + r * ld : NULL, ld};
    float mean[LN_RMAX], rstd[LN_RMAX];
    if (rms)
        row_ms(p, &src, R, K, resid, a->eps, mean, rstd);
    else
        row_stats(p, &src, R, K, resid, a->eps, mean, rstd, NULL);
    for (unsigned i = 0; i < R; i++) {
        /* The apply pass reads s back from sum when stored, else recomputes x + residual. */
        const LN_ELEM *v1 = src.sum ? src.sum + i * ld : src.x + i * ld;
        const LN_ELEM *v2 = resid && !src.sum ? src.res + i * ld : NULL;
        apply_row(p, v1, v2, a->gamma, a->beta, a->y + (r + i) * a->ldy, mean[i], rstd[i]);
        if (a->mean)
            a->mean[r + i] = mean[i];
        if (a->rstd)
            a->rstd[r + i] = rstd[i];
    }
}

LN_INLINE void forward_rows(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1,
                            unsigned mode)
{
    size_t r = r0;
    if (p->n <= LN_SMALL_COLS) {
        for (; r + LN_RFWD <= r1; r += LN_RFWD)
            forward_group(a, p, r, LN_RFWD, LN_KSMALL, mode);
        for (; r < r1; r++)
            forward_group(a, p, r, 1, LN_KSMALL, mode);
    } else {
        for (; r < r1; r++)
            forward_group(a, p, r, 1, LN_KBIG, mode);
    }
}

/* LayerNorm with gamma and beta (the common case), groups of R rows from r0 on: group
   g's apply pass runs inside group g+1's statistics pass. Returns the first row left. */
LN_INLINE size_t forward_pipelined(const ln_body_fwd_args *a, const ln_plan *p, size_t r0,
                                   size_t r1, unsigned R, unsigned K)
{
    if (r1 - r0 < R)
        return r0;
    const size_t ld = a->ldx;
    float mean[LN_RMAX], rstd[LN_RMAX];
    ln_src src = {a->x + r0 * ld, NULL, NULL, ld};
    row_stats(p, &src, R, K, 0, a->eps, mean, rstd, NULL);
    for (size_t r = r0;; r += R) {
        ln_fuse fz = {.g = a->gamma, .b = a->beta};
        for (unsigned i = 0; i < R; i++) {
            if (a->mean)
                a->mean[r + i] = mean[i];
            if (a->rstd)
                a->rstd[r + i] = rstd[i];
            fz.x[i] = a->x + (r + i) * ld;
            fz.y[i] = a->y + (r + i) * a->ldy;
            fz.mv[i] = v_set1(mean[i]);
            fz.rs[i] = v_set1(rstd[i]);
        }
        if (r1 - r < 2 * R) {
            for (unsigned i = 0; i < R; i++)
                apply_row(p, fz.x[i], NULL, fz.g, fz.b, fz.y[i], mean[i], rstd[i]);
            return r + R;
        }
        src.x = a->x + (r + R) * ld;
        row_stats(p, &src, R, K, 0, a->eps, mean, rstd, &fz);
    }
}

static void forward_plain(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    /* Short rows are bound by their reductions' latency instead, which interleaving
       rows hides better (pipelining 4-row groups spilled and ran 1.4x slower). */
    if (a->gamma && a->beta && p->n > LN_SMALL_COLS)
        forward_pipelined(a, p, r0, r1, 1, LN_KBIG);
    else
        forward_rows(a, p, r0, r1, 0);
}

static void forward_rms(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    forward_rows(a, p, r0, r1, 1);
}

static void forward_add(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    forward_rows(a, p, r0, r1, 2);
}

static void forward_add_rms(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    forward_rows(a, p, r0, r1, 3);
}

static void forward_kernel(const ln_body_fwd_args *a, size_t r0, size_t r1)
{
    static void (*const variants[4])(const ln_body_fwd_args *, const ln_plan *, size_t, size_t) = {
        forward_plain, forward_rms, forward_add, forward_add_rms};
    ln_plan p;
    plan_init(&p, a->cols, a->cols <= LN_SMALL_COLS ? LN_KSMALL : LN_KBIG);
    const unsigned mode = ((a->flags & LN_FLAG_RMS_NORM) ? 1u : 0u) | (a->residual ? 2u : 0u);
    variants[mode](a, &p, r0, r1);
}

#endif /* LN_KERNELS_FORWARD_H */
