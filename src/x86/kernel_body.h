/* kernel_body.h - the x86 LayerNorm algorithm, written once over the small vector
   vocabulary that avx2.c and avx512.c each define with their own intrinsics. */
#ifndef LN_X86_KERNEL_BODY_H
#define LN_X86_KERNEL_BODY_H

/*
 * Included by a kernel file after it defines (intrinsics live only there):
 *   V, VM             float vector of LN_W lanes, tail mask
 *   LN_W, LN_LOG2W    lanes and log2(lanes); LN_KBIG accumulators per row for long rows,
 *   LN_RFWD, LN_RBWD  rows interleaved for short rows (forward, backward)
 *   v_load v_loadm v_store v_storem v_set1 v_zero v_add v_sub v_mul
 *   v_fma(a,b,c) = a*b+c   v_fnma(a,b,c) = c-a*b   v_fold(v, level): lane l+W/2^(level+1)
 *   moved to lane l   v_lane0(v)   v_tailmask(t): the first t lanes
 * Nothing here depends on the ISA beyond those names, so both kernels share one proof of
 * correctness; only the lane count and the vocabulary differ.
 */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

#define LN_INLINE static inline __attribute__((always_inline))
#define LN_KMAX 8 /* most Welford accumulators per row */
#define LN_RMAX 4 /* most rows interleaved */
#define LN_KSMALL 2
/* Up to this many columns a row's fixed costs (merges, horizontal reduction, sqrt and
   divide) dominate: two accumulators per row, several rows interleaved instead. */
#define LN_SMALL_COLS (32 * LN_W)

/*
 * Everything about the reduction that depends only on cols: computed once per call, so
 * per row the merges are multiply-adds with ready coefficients. Chan's merge of (na, ma,
 * M2a) and (nb, mb, M2b): d = mb - ma, mean = ma + d*f1, M2 = M2a + M2b + d*(d*f2) with
 * f1 = nb/n, f2 = na*nb/n (both 0 when n == 0, so empty partners are no-ops). d*(d*f2)
 * rather than (d*d)*f2: an empty partner then gives 0 even if d*d would overflow.
 */
typedef struct ln_plan {
    size_t n, nv, nblk; /* columns, full vectors, full blocks of k vectors */
    unsigned k, rv, t;  /* accumulators, vectors after the blocks, tail lanes */
    float inv_n;
    VM tmask;
    float acc_f1[LN_KMAX], acc_f2[LN_KMAX]; /* tree over accumulators, merge order */
    float tail_f1[LN_W], tail_f2[LN_W];     /* tail lanes into the merged vector */
    float lane_f1[LN_LOG2W][LN_W], lane_f2[LN_LOG2W][LN_W]; /* horizontal tree */
} ln_plan;

static void chan_coef(double na, double nb, float *f1, float *f2)
{
    const double n = na + nb;
    *f1 = n > 0 ? (float)(nb / n) : 0.0f;
    *f2 = n > 0 ? (float)(na * nb / n) : 0.0f;
}

static void plan_init(ln_plan *p, size_t n, unsigned k)
{
    p->n = n;
    p->nv = n / LN_W;
    p->k = k;
    p->nblk = p->nv / k;
    p->rv = (unsigned)(p->nv % k);
    p->t = (unsigned)(n % LN_W);
    p->inv_n = (float)(1.0 / (double)n);
    p->tmask = v_tailmask(p->t);
    /* Accumulator j has seen nblk + (j < rv) vectors; merged pairwise, stride 1, 2, 4. */
    double cnt[LN_KMAX];
    for (unsigned j = 0; j < k; j++)
        cnt[j] = (double)(p->nblk + (j < p->rv));
    unsigned m = 0;
    for (unsigned s = 1; s < k; s *= 2)
        for (unsigned j = 0; j + s < k; j += 2 * s) {
            chan_coef(cnt[j], cnt[j + s], &p->acc_f1[m], &p->acc_f2[m]);
            cnt[j] += cnt[j + s];
            m++;
        }
    /* After that every lane has seen nv values; tail lane l adds one value. */
    double lc[LN_W];
    for (unsigned l = 0; l < LN_W; l++) {
        const int in = l < p->t;
        chan_coef((double)p->nv, in ? 1.0 : 0.0, &p->tail_f1[l], &p->tail_f2[l]);
        lc[l] = (double)p->nv + in;
    }
    for (unsigned lv = 0; lv < LN_LOG2W; lv++) {
        const unsigned h = LN_W >> (lv + 1);
        for (unsigned l = 0; l < LN_W; l++) {
            if (l < h) {
                chan_coef(lc[l], lc[l + h], &p->lane_f1[lv][l], &p->lane_f2[lv][l]);
                lc[l] += lc[l + h];
            } else {
                p->lane_f1[lv][l] = p->lane_f2[lv][l] = 0.0f;
            }
        }
    }
}

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
 * Mean and rstd of R rows (ldx apart) with K accumulators each. The values are shifted
 * by the row's first element, so the running means stay near the spread instead of the
 * offset (rows with |mean| >> std keep their precision; a constant row stays exactly 0).
 * Each row's operations and their order depend only on cols and K, never on R: grouping
 * rows only interleaves independent instruction streams.
 */
LN_INLINE void row_stats(const ln_plan *p, const float *x, size_t ldx, unsigned R,
                         unsigned K, float eps, float *mean, float *rstd)
{
    V m[LN_RMAX][LN_KMAX], q[LN_RMAX][LN_KMAX], s[LN_RMAX];
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        s[r] = v_set1(x[r * ldx]);
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            m[r][j] = q[r][j] = v_zero();
    }
    const float *xb = x;
    for (size_t b = 0; b < p->nblk; b++, xb += K * LN_W) {
        const V rc = v_set1(1.0f / (float)(b + 1));
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                welford_step(&m[r][j], &q[r][j],
                             v_sub(v_load(xb + r * ldx + j * LN_W), s[r]), rc);
    }
    if (p->rv) {
        const V rc = v_set1(1.0f / (float)(p->nblk + 1));
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            if (j < p->rv)
#pragma GCC unroll 4
                for (unsigned r = 0; r < R; r++)
                    welford_step(&m[r][j], &q[r][j],
                                 v_sub(v_load(xb + r * ldx + j * LN_W), s[r]), rc);
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
        const float *xt = x + p->nv * LN_W;
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            chan_merge(&m[r][0], &q[r][0], v_sub(v_loadm(xt + r * ldx, p->tmask), s[r]),
                       v_zero(), f1, f2);
    }
#pragma GCC unroll 4
    for (unsigned lv = 0; lv < LN_LOG2W; lv++) {
        const V f1 = v_load(p->lane_f1[lv]), f2 = v_load(p->lane_f2[lv]);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            chan_merge(&m[r][0], &q[r][0], v_fold(m[r][0], lv), v_fold(q[r][0], lv), f1, f2);
    }
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        /* Correctly rounded divide and sqrt: no reciprocal-sqrt estimate. */
        const float var = v_lane0(q[r][0]) / (float)p->n;
        mean[r] = x[r * ldx] + v_lane0(m[r][0]);
        rstd[r] = 1.0f / sqrtf(var + eps);
    }
}

/* y = (x - mean) * (rstd * gamma) + beta, centered: a constant row gives 0 * s + beta. */
LN_INLINE V apply_one(const float *x, const float *g, const float *b, size_t i, VM tm,
                      int tail, V mv, V rs, int hg, int hb)
{
    const V c = v_sub(tail ? v_loadm(x + i, tm) : v_load(x + i), mv);
    const V sc = hg ? v_mul(rs, tail ? v_loadm(g + i, tm) : v_load(g + i)) : rs;
    if (hb)
        return v_fma(c, sc, tail ? v_loadm(b + i, tm) : v_load(b + i));
    return v_mul(c, sc);
}

LN_INLINE void apply_row_t(const ln_plan *p, const float *x, const float *g, const float *b,
                           float *y, float mean, float rstd, int hg, int hb)
{
    const V mv = v_set1(mean), rs = v_set1(rstd);
    const size_t n = p->n;
    size_t i = 0;
    for (; i + 4 * LN_W <= n; i += 4 * LN_W) {
        const V y0 = apply_one(x, g, b, i, p->tmask, 0, mv, rs, hg, hb);
        const V y1 = apply_one(x, g, b, i + LN_W, p->tmask, 0, mv, rs, hg, hb);
        const V y2 = apply_one(x, g, b, i + 2 * LN_W, p->tmask, 0, mv, rs, hg, hb);
        const V y3 = apply_one(x, g, b, i + 3 * LN_W, p->tmask, 0, mv, rs, hg, hb);
        v_store(y + i, y0);
        v_store(y + i + LN_W, y1);
        v_store(y + i + 2 * LN_W, y2);
        v_store(y + i + 3 * LN_W, y3);
    }
    for (; i + LN_W <= n; i += LN_W)
        v_store(y + i, apply_one(x, g, b, i, p->tmask, 0, mv, rs, hg, hb));
    if (i < n)
        v_storem(y + i, p->tmask, apply_one(x, g, b, i, p->tmask, 1, mv, rs, hg, hb));
}

/* The NULL-gamma / NULL-beta cases get their own loops: no loads of implicit ones. */
static void apply_row(const ln_plan *p, const float *x, const float *g, const float *b,
                      float *y, float mean, float rstd)
{
    if (g && b)
        apply_row_t(p, x, g, b, y, mean, rstd, 1, 1);
    else if (g)
        apply_row_t(p, x, g, b, y, mean, rstd, 1, 0);
    else if (b)
        apply_row_t(p, x, g, b, y, mean, rstd, 0, 1);
    else
        apply_row_t(p, x, g, b, y, mean, rstd, 0, 0);
}

LN_INLINE void forward_group(const ln_fwd_args *a, const ln_plan *p, size_t r, unsigned R,
                             unsigned K)
{
    float mean[LN_RMAX], rstd[LN_RMAX];
    row_stats(p, a->x + r * a->ldx, a->ldx, R, K, a->eps, mean, rstd);
    for (unsigned i = 0; i < R; i++) {
        apply_row(p, a->x + (r + i) * a->ldx, a->gamma, a->beta, a->y + (r + i) * a->ldy,
                  mean[i], rstd[i]);
        if (a->mean)
            a->mean[r + i] = mean[i];
        if (a->rstd)
            a->rstd[r + i] = rstd[i];
    }
}

static void forward_small(const ln_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    size_t r = r0;
    for (; r + LN_RFWD <= r1; r += LN_RFWD)
        forward_group(a, p, r, LN_RFWD, LN_KSMALL);
    for (; r < r1; r++)
        forward_group(a, p, r, 1, LN_KSMALL);
}

static void forward_big(const ln_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    for (size_t r = r0; r < r1; r++)
        forward_group(a, p, r, 1, LN_KBIG);
}

static void forward_kernel(const ln_fwd_args *a, size_t r0, size_t r1)
{
    ln_plan p;
    if (a->cols <= LN_SMALL_COLS) {
        plan_init(&p, a->cols, LN_KSMALL);
        forward_small(a, &p, r0, r1);
    } else {
        plan_init(&p, a->cols, LN_KBIG);
        forward_big(a, &p, r0, r1);
    }
}

/* Sum of the lanes in a fixed tree order. */
LN_INLINE float hsum(V v)
{
#pragma GCC unroll 4
    for (unsigned lv = 0; lv < LN_LOG2W; lv++)
        v = v_add(v, v_fold(v, lv));
    return v_lane0(v);
}

/* Per-row state of a backward group: pointers, saved statistics, two pairs of sums. */
typedef struct ln_bwd_rows {
    const float *x[LN_RMAX], *dy[LN_RMAX];
    V mv[LN_RMAX], rs[LN_RMAX], sg[LN_RMAX][2], sx[LN_RMAX][2];
} ln_bwd_rows;

/* Pass A on the vector at column c for R rows; u picks the sums (alternating vectors
   shortens each sum's dependency chain). */
LN_INLINE void bwd_reduce_vec(ln_bwd_rows *w, const ln_plan *p, size_t c, int tail,
                              unsigned u, unsigned R, const float *gamma, float *dg,
                              float *db, int first, int want_dx)
{
    const VM tm = p->tmask;
    V gv = v_zero(), vdg = v_zero(), vdb = v_zero();
    if (gamma)
        gv = tail ? v_loadm(gamma + c, tm) : v_load(gamma + c);
    if (dg && !first)
        vdg = tail ? v_loadm(dg + c, tm) : v_load(dg + c);
    if (db && !first)
        vdb = tail ? v_loadm(db + c, tm) : v_load(db + c);
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        const V xv = tail ? v_loadm(w->x[i] + c, tm) : v_load(w->x[i] + c);
        const V dv = tail ? v_loadm(w->dy[i] + c, tm) : v_load(w->dy[i] + c);
        const V xh = v_mul(v_sub(xv, w->mv[i]), w->rs[i]);
        if (want_dx) {
            const V g = gamma ? v_mul(dv, gv) : dv;
            w->sg[i][u] = v_add(w->sg[i][u], g);
            w->sx[i][u] = v_fma(g, xh, w->sx[i][u]);
        }
        vdg = v_fma(dv, xh, vdg);
        vdb = v_add(vdb, dv);
    }
    if (dg) {
        if (tail)
            v_storem(dg + c, tm, vdg);
        else
            v_store(dg + c, vdg);
    }
    if (db) {
        if (tail)
            v_storem(db + c, tm, vdb);
        else
            v_store(db + c, vdb);
    }
}

/* Pass B: dx = rstd * (g - mean(g) - xhat * mean(g*xhat)). */
LN_INLINE V bwd_dx_vec(const float *x, const float *dy, const float *gamma, size_t c,
                       int tail, VM tm, V mv, V rs, V mg, V mx)
{
    const V xh = v_mul(v_sub(tail ? v_loadm(x + c, tm) : v_load(x + c), mv), rs);
    const V dv = tail ? v_loadm(dy + c, tm) : v_load(dy + c);
    const V g = gamma ? v_mul(dv, tail ? v_loadm(gamma + c, tm) : v_load(gamma + c)) : dv;
    return v_mul(v_fnma(xh, mx, v_sub(g, mg)), rs);
}

/*
 * Backward for R rows, interleaved; each row's sums are reduced in an order that depends
 * only on cols, never on R. Pass A reduces sum(g) and sum(g*xhat) per row and adds the
 * rows' dy*xhat and dy to the block partials in row order (so the partials do not depend
 * on R either); pass B writes dx while the rows are still in L1. `first`: the partials
 * start from +0 instead of their stored values. gamma is NULL or a->gamma, constant per
 * instantiation so the NULL case has its own loops.
 */
LN_INLINE void backward_group(const ln_bwd_args *a, const ln_plan *p, size_t r, unsigned R,
                              const float *gamma, float *dg, float *db, int first)
{
    ln_bwd_rows w;
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        w.x[i] = a->x + (r + i) * a->ldx;
        w.dy[i] = a->dy + (r + i) * a->lddy;
        w.mv[i] = v_set1(a->mean[r + i]);
        w.rs[i] = v_set1(a->rstd[r + i]);
        w.sg[i][0] = w.sg[i][1] = w.sx[i][0] = w.sx[i][1] = v_zero();
    }
    const size_t n = p->n;
    const int want_dx = a->dx != NULL;
    size_t c = 0;
    for (; c + 2 * LN_W <= n; c += 2 * LN_W) {
        bwd_reduce_vec(&w, p, c, 0, 0, R, gamma, dg, db, first, want_dx);
        bwd_reduce_vec(&w, p, c + LN_W, 0, 1, R, gamma, dg, db, first, want_dx);
    }
    if (c + LN_W <= n) {
        bwd_reduce_vec(&w, p, c, 0, 0, R, gamma, dg, db, first, want_dx);
        c += LN_W;
    }
    if (c < n)
        bwd_reduce_vec(&w, p, c, 1, 1, R, gamma, dg, db, first, want_dx);
    if (!want_dx)
        return;
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        const V mg = v_set1(hsum(v_add(w.sg[i][0], w.sg[i][1])) * p->inv_n);
        const V mx = v_set1(hsum(v_add(w.sx[i][0], w.sx[i][1])) * p->inv_n);
        float *dx = a->dx + (r + i) * a->lddx;
        size_t k = 0;
        for (; k + LN_W <= n; k += LN_W)
            v_store(dx + k, bwd_dx_vec(w.x[i], w.dy[i], gamma, k, 0, p->tmask, w.mv[i],
                                       w.rs[i], mg, mx));
        if (k < n)
            v_storem(dx + k, p->tmask, bwd_dx_vec(w.x[i], w.dy[i], gamma, k, 1, p->tmask,
                                                  w.mv[i], w.rs[i], mg, mx));
    }
}

/* Rows interleaved by R; R shrinks with cols so a group's rows stay in L1 for pass B. */
LN_INLINE void backward_rows(const ln_bwd_args *a, const ln_plan *p, size_t r0, size_t r1,
                             const float *gamma, float *dg, float *db)
{
    size_t r = r0;
    if (p->n <= LN_SMALL_COLS)
        for (; r + LN_RBWD <= r1; r += LN_RBWD)
            backward_group(a, p, r, LN_RBWD, gamma, dg, db, r == r0);
    else if (p->n <= 512)
        for (; r + 2 <= r1; r += 2)
            backward_group(a, p, r, 2, gamma, dg, db, r == r0);
    for (; r < r1; r++)
        backward_group(a, p, r, 1, gamma, dg, db, r == r0);
}

static void backward_kernel(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    ln_plan p;
    plan_init(&p, a->cols, 1);
    if (r0 >= r1) { /* no rows: the partials are empty sums */
        for (size_t j = 0; j < a->cols; j++) {
            if (dg)
                dg[j] = 0.0f;
            if (db)
                db[j] = 0.0f;
        }
        return;
    }
    if (a->gamma)
        backward_rows(a, &p, r0, r1, a->gamma, dg, db);
    else
        backward_rows(a, &p, r0, r1, NULL, dg, db);
}

#endif /* LN_X86_KERNEL_BODY_H */
