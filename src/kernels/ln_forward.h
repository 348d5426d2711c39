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

/* args.nt where the element type streams (float; bf16 on x86); else stores are ordinary. */
#ifdef LN_E_STREAM
#define LN_NT(a) ((a)->nt)
#else
#define LN_NT(a) 0u
#endif

/* Chan's merge of lane statistics kept as shift + mean (the lane's mean is sa + ma): the
   means' difference d = (sb - sa) + (mb - ma) is formed from the small parts, so it
   keeps its precision when the shifts are large and close (offset rows). */
LN_INLINE void chan_merge(V sa, V *ma, V *qa, V sb, V mb, V qb, V f1, V f2)
{
    const V d = v_add(v_sub(sb, sa), v_sub(mb, *ma));
    *ma = v_fma(d, f1, *ma);
    *qa = v_fma(v_mul(d, f2), d, v_add(*qa, qb));
}

/* Moves a lane's running mean into its shift, exactly (s + m == s' + m' in real numbers),
   so the running mean stays near 0 and its roundings stay small. Both forms below give
   the same t = fl(s + m) and the exact remainder s + m - t, so the same bits. */
#ifdef LN_HAVE_MAXMAG
/* Fast two-sum from the operand of larger magnitude (exact when it comes first): a
   chain of three dependent operations after the select instead of five, on the
   latency-bound paths (one row's statistics, the merge trees). The select returns one
   operand's bits, so the xor of all three gives the other. */
LN_INLINE void ln_recenter(V *s, V *m)
{
    const V a = v_maxmag(*s, *m), b = v_xor(v_xor(*s, *m), a), t = v_add(*s, *m);
    *m = v_sub(b, v_sub(t, a));
    *s = t;
}
#else
/* Two-sum: exact whatever the operands' magnitudes. */
LN_INLINE void ln_recenter(V *s, V *m)
{
    const V t = v_add(*s, *m), bb = v_sub(t, *s);
    *m = v_add(v_sub(*s, v_sub(t, bb)), v_sub(*m, bb));
    *s = t;
}
#endif

/* Adds a piece to a compensated sum (Kahan: *c keeps the low part *sum lost). The sum's
   value is *sum - *c. */
LN_INLINE void ln_kahan_add(V *sum, V *c, V piece)
{
    const V y = v_sub(piece, *c), t = v_add(*sum, y);
    *c = v_sub(v_sub(t, *sum), y);
    *sum = t;
}

/* One merge of the horizontal tree: partner b into a, the result re-centered. */
LN_INLINE void tree_merge(V *s, V *m, V *q, V sb, V mb, V qb, V f1, V f2)
{
    chan_merge(*s, m, q, sb, mb, qb, f1, f2);
    ln_recenter(s, m);
}

/* The horizontal tree's coefficients at level lv: per lane with a tail (the plan's, packed
   for the four-row tree as well), else equal counts. */
LN_INLINE void lane_coefs(const ln_plan *p, unsigned lv, V *f1, V *f2)
{
    *f1 = p->t ? v_load(p->lane_f1[lv]) : v_set1(0.5f);
    *f2 = p->t ? v_load(p->lane_f2[lv]) : v_set1(p->lane_u[lv]);
}

#ifdef LN_TREE4_POS
/*
 * The horizontal tree of four rows at once, with their lanes packed side by side: level 0
 * merges two rows' halves in one vector (v_cat_lo/hi), level 1 four rows' quarters
 * (v_quad_lo/hi), later levels fold within each row's quarter. Every lane meets the same
 * partner with the same coefficients as in the one-row tree (plan_init lays the per-lane
 * tail coefficients out packed), so the results are bit for bit those of that tree, in 2 +
 * 1 + (log2 W - 2) merges instead of 4 log2 W. The tree is still ~a quarter of a 64-column
 * row's time (without it the forward ran 1.39x faster): its cost is the chain of
 * dependent merges, whose depth the packing does not change; it gained 1.02-1.06x.
 */
LN_INLINE void lane_tree4(const ln_plan *p, const V s0[4], const V m0[4], const V q0[4],
                          V *so, V *mo, V *qo)
{
    V s[2], m[2], q[2], f1, f2;
    lane_coefs(p, 0, &f1, &f2);
    for (unsigned h = 0; h < 2; h++) {
        const unsigned a = 2 * h, b = a + 1;
        s[h] = v_cat_lo(s0[a], s0[b]);
        m[h] = v_cat_lo(m0[a], m0[b]);
        q[h] = v_cat_lo(q0[a], q0[b]);
        tree_merge(&s[h], &m[h], &q[h], v_cat_hi(s0[a], s0[b]), v_cat_hi(m0[a], m0[b]),
                   v_cat_hi(q0[a], q0[b]), f1, f2);
    }
    V S = v_quad_lo(s[0], s[1]), M = v_quad_lo(m[0], m[1]), Q = v_quad_lo(q[0], q[1]);
#pragma GCC unroll 4
    for (unsigned lv = 1; lv < LN_LOG2W; lv++) {
        lane_coefs(p, lv, &f1, &f2);
        if (lv == 1)
            tree_merge(&S, &M, &Q, v_quad_hi(s[0], s[1]), v_quad_hi(m[0], m[1]),
                       v_quad_hi(q[0], q[1]), f1, f2);
        else
            tree_merge(&S, &M, &Q, v_fold(S, lv), v_fold(M, lv), v_fold(Q, lv), f1, f2);
    }
    *so = S;
    *mo = M;
    *qo = Q;
}
#endif

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

/* y = ((v - mean) - dmean) * (rstd * gamma) + beta, centered on the mean's float value
   and its remainder (row_stats): a constant row gives 0 * s + beta. RMSNorm (ctr = 0)
   takes v itself. v is x[i], or x[i] + r2[i] when `two` (the residual not stored). */
LN_INLINE V apply_v(V v, V gv, V bv, V mv, V dv, V rs, int hg, int hb, int ctr)
{
    const V c = ctr ? v_sub(v_sub(v, mv), dv) : v;
    const V sc = hg ? v_mul(rs, gv) : rs;
    if (hb)
        return v_fma(c, sc, bv);
    return v_mul(c, sc);
}

/* apply_v's operations with each load next to its use: loading gamma and beta up front
   (through apply_v) ran the cold forward 0.83-0.96x at 256-2048 columns. */
LN_INLINE V apply_one(const LN_ELEM *x, const LN_ELEM *r2, const float *g, const float *b,
                      size_t i, VM tm, int tail, V mv, V dv, V rs, int hg, int hb, int two,
                      int ctr)
{
    V v = eload_t(x + i, tail, tm);
    if (two)
        v = v_add(v, eload_t(r2 + i, tail, tm));
    const V c = ctr ? v_sub(v_sub(v, mv), dv) : v;
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
    V mv[LN_RMAX], dv[LN_RMAX], rs[LN_RMAX];
} ln_fuse;

LN_INLINE void fuse_vec(const ln_fuse *f, unsigned R, size_t i, int tail, VM tm)
{
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
        estore_t(f->y[r] + i,
                apply_one(f->x[r], NULL, f->g, f->b, i, tm, tail, f->mv[r], f->dv[r], f->rs[r], 1,
                          1, 0, 1),
                tail, tm);
}

/* Two full vectors at i and i + LN_W, stored as a pair (bf16 packs them into one store). */
LN_INLINE void fuse_vec2(const ln_fuse *f, unsigned R, size_t i, VM tm)
{
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        const V y0 = apply_one(f->x[r], NULL, f->g, f->b, i, tm, 0, f->mv[r], f->dv[r],
                               f->rs[r], 1, 1, 0, 1);
        const V y1 = apply_one(f->x[r], NULL, f->g, f->b, i + LN_W, tm, 0, f->mv[r], f->dv[r],
                               f->rs[r], 1, 1, 0, 1);
        e_store2(f->y[r] + i, y0, y1);
    }
}

/* The row's i-th value for the rescue: p[i], plus q[i] (float addition) when q. */
static float ln_get_src(const void *p, const void *q, size_t i)
{
    const float v = e_get((const LN_ELEM *)p + i);
    return q ? v + e_get((const LN_ELEM *)q + i) : v;
}

/* A row whose float statistics left their range, redone in double (kernels/plan.h). The
   source as the apply pass reads it: the stored sum, else x (+ residual). */
LN_INLINE void row_rescue(const ln_src *src, unsigned r, size_t n, int resid, int rms,
                          float eps, float *mean, float *dmean, float *rstd)
{
    const size_t o = r * src->ld;
    const LN_ELEM *p = src->sum ? src->sum + o : src->x + o;
    const LN_ELEM *q = resid && !src->sum ? src->res + o : NULL;
    ln_rescue_row(ln_get_src, p, q, n, rms, eps, mean, dmean, rstd);
}

#ifdef LN_TREE4_POS
/* The end of row_stats for a four-row group, the rows in four lanes: the two-sum, rstd
   (ln_rstd_of) and the range test (kernels/plan.h) as the scalar loop below takes them,
   lane by lane the same IEEE operations (correctly rounded divide and sqrt), so the same
   bits. Scalar, the four rows' divides and square roots queued on the divider, which
   short rows wait for: four lanes at once ran 1.06x at 64 columns, 1.02-1.04x at 256-768
   (AVX-512, hot), 0.99-1.00x on AVX2. */
LN_INLINE void stats_finish4(const ln_plan *p, const ln_src *src, int resid, float eps, ln_f4 s,
                             ln_f4 m, ln_f4 q, float *mean, float *dmean, float *rstd)
{
    ln_f4 hi, lo;
    LN_TWO_SUM(s, m, hi, lo);
    const ln_f4 t = q / (float)p->n + eps; /* the range test's, in float as ln_stats_out_of_range */
    const ln_d4 v = LN_F4_TO_D4(q) * (1.0 / (double)p->n); /* as ln_rstd_of, not contracted */
    const ln_f4 rs = LN_D4_TO_F4(1.0 / LN_D4_SQRT(v + (double)eps));
    __builtin_memcpy(mean, &hi, sizeof hi);
    __builtin_memcpy(dmean, &lo, sizeof lo);
    __builtin_memcpy(rstd, &rs, sizeof rs);
    const unsigned bad = LN_I4_BAD(LN_STATS_IN_RANGE(q, t));
    for (unsigned r = 0; bad && r < 4; r++)
        if (bad >> r & 1u)
            row_rescue(src, r, p->n, resid, 0, eps, &mean[r], &dmean[r], &rstd[r]);
}
#endif

/* Block b of R rows (its K vectors each from column b K LN_W on): one Welford step per
   accumulator, and the previous group's apply riding along (fz). */
LN_INLINE void row_block(const ln_plan *p, const ln_src *src, unsigned R, unsigned K, int resid,
                         size_t b, V s[LN_RMAX][LN_KMAX], V m[LN_RMAX][LN_KMAX],
                         V q[LN_RMAX][LN_KMAX], const ln_fuse *fz)
{
    const size_t off = b * K * LN_W, ld = src->ld;
    const V rc = v_set1(ln_recip_of(b + 1));
#pragma GCC unroll 8
    for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            welford_step(&m[r][j], &q[r][j],
                         v_sub(src_vec(src, off + r * ld + j * LN_W, 0, p->tmask, resid),
                               s[r][j]),
                         rc);
    if (fz)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j += 2)
            fuse_vec2(fz, R, off + j * LN_W, p->tmask);
}

/*
 * Mean and rstd of R rows with K accumulators each, Welford per lane on values shifted
 * by a per-lane shift: first the lane's first value, then the lane's own running mean,
 * moved into the shift exactly (ln_recenter) after blocks 4 and every LN_RECENTER
 * blocks (ln_recenter_after: a far first value or a lane's outlier moves the lane's mean
 * by ~1/N of its distance, so early re-centerings catch it up), and around every merge. The
 * running mean m thus stays near the spread of the last blocks, never near the offset
 * or a far first value, so its roundings are ~2^-24 of sigma (rows with |mean| >> sigma
 * keep their precision; a constant row stays exactly 0). Why that matters: with a fixed
 * shift s, m ~ mean - s and every update rounds by 2^-24 |m|; over k updates of a lane
 * that is ~2^-24 |m| sqrt(k)/3, i.e. ~1e-6 sigma at k = 2048 for a randn row and far
 * more when s is an outlier. After a re-centering the shifted values x - s are exact for
 * offset rows (Sterbenz) and m moves only by the new blocks' drift.
 * The mean leaves as mean + dmean (the float mean and the exact remainder of the lane
 * sum s + m, two-sum), which the apply centers on: (x - mean) - dmean, with x - mean
 * exact or within 2^-24 of |x - mean|.
 * Each row's operations and their order depend only on cols and K, never on R: grouping
 * rows only interleaves independent instruction streams.
 * Range: M2 overflows once |x_i - mean| >~ 1e19/sqrt(n) and underflows for tiny rows;
 * such a row is noticed (ln_stats_out_of_range) and redone in double (row_rescue).
 */
LN_INLINE void row_stats(const ln_plan *p, const ln_src *src, unsigned R, unsigned K,
                         int resid, float eps, float *mean, float *dmean, float *rstd,
                         const ln_fuse *fz)
{
    V m[LN_RMAX][LN_KMAX], q[LN_RMAX][LN_KMAX], s[LN_RMAX][LN_KMAX];
    V qo[LN_RMAX][LN_KMAX], qc[LN_RMAX][LN_KMAX];
    const size_t ld = src->ld;
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            s[r][j] = m[r][j] = q[r][j] = qo[r][j] = qc[r][j] = v_zero();
    size_t off = 0;
    /* Block 0: each lane's first value is its shift, exactly (s = x, m = q = 0), where a
       Welford step from the row's first value as the shift, then a re-centering, rounded
       x - s0 (0.5 2^-24 of the distance) and took 8 operations a vector. The lanes that
       see no block start from s = 0, so a first value they take (the vectors after the
       blocks, a tail lane's value) enters exactly too: x - 0, then x + 0. Heavy-tailed
       rows, whose M2 is a few values' distances, lost up to 1.5 2^-24 of rstd to that
       rounding on rows of 16-64 columns. */
    if (p->nblk) {
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                s[r][j] = src_vec(src, r * ld + j * LN_W, 0, p->tmask, resid);
        if (fz)
#pragma GCC unroll 8
            for (unsigned j = 0; j < K; j += 2)
                fuse_vec2(fz, R, j * LN_W, p->tmask);
        off = K * LN_W;
    }
    /* Runs of blocks between re-centerings: no branch inside the loop that feeds the
       accumulators (one there cost ~0.5 instructions per element in spills). */
    for (size_t b = 1; b < p->nblk;) {
        const size_t stop = ln_recenter_next(b), end = stop < p->nblk ? stop : p->nblk;
        for (; b < end; b++, off += K * LN_W)
            row_block(p, src, R, K, resid, b, s, m, q, fz);
        /* The first piece goes into the compensated sum (0, 0), where ln_kahan_add gives
           qo = q, qc = 0 bit for bit (q is never -0: it starts at +0 and adds products
           d (x - m') >= 0): a move there, a tenth of a short row's operations otherwise. */
        const int first = stop == ln_recenter_next(1);
        if (b == stop)
#pragma GCC unroll 8
            for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
                for (unsigned r = 0; r < R; r++) {
                    ln_recenter(&s[r][j], &m[r][j]);
                    /* M2 is the sum of Welford's increments d (x - m'): summed in pieces
                       of <= LN_RECENTER, then the pieces, compensated (Kahan, low part in
                       qc). The pieces are positive and alike, so a plain sum of them
                       rounds coherently: ~2^-24 per piece, 32 pieces of a 16384-col row
                       on 4-lane kernels put rstd at 4.2 * 2^-24. */
                    if (first)
                        qo[r][j] = q[r][j];
                    else
                        ln_kahan_add(&qo[r][j], &qc[r][j], q[r][j]);
                    q[r][j] = v_zero();
                }
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
                                               resid), s[r][j]), rc);
    }
    if (fz) {
        for (size_t i = off; i < p->nv * LN_W; i += LN_W)
            fuse_vec(fz, R, i, 0, p->tmask);
        if (p->t)
            fuse_vec(fz, R, p->nv * LN_W, 1, p->tmask);
    }
    /* Every merge below starts from re-centered partners and re-centers its result: d and
       the merged m are then formed from the lanes' small parts only, whatever the row's
       first value or the lanes' shifts were (a far first value would otherwise leave m
       ~ its distance, rounded by 2^-24 of it in every merge). */
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++) {
            q[r][j] = v_add(qo[r][j], v_sub(q[r][j], qc[r][j]));
            ln_recenter(&s[r][j], &m[r][j]);
        }
    unsigned mi = 0;
#pragma GCC unroll 4
    for (unsigned st = 1; st < K; st *= 2)
#pragma GCC unroll 4
        for (unsigned j = 0; j + st < K; j += 2 * st, mi++) {
            const V f1 = v_set1(p->acc_f1[mi]), f2 = v_set1(p->acc_f2[mi]);
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                tree_merge(&s[r][j], &m[r][j], &q[r][j], s[r][j + st], m[r][j + st],
                           q[r][j + st], f1, f2);
        }
    if (p->t) {
        /* A tail lane's one value v is the partner (shift v, mean 0, M2 0). Masked-off
           lanes load 0 (finite) and have f1 = f2 = 0. */
        const V f1 = v_load(p->tail_f1), f2 = v_load(p->tail_f2);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            tree_merge(&s[r][0], &m[r][0], &q[r][0],
                       src_vec(src, p->nv * LN_W + r * ld, 1, p->tmask, resid), v_zero(),
                       v_zero(), f1, f2);
    }
#ifdef LN_TREE4_POS
    if (R == 4) {
        const V s4[4] = {s[0][0], s[1][0], s[2][0], s[3][0]};
        const V m4[4] = {m[0][0], m[1][0], m[2][0], m[3][0]};
        const V q4[4] = {q[0][0], q[1][0], q[2][0], q[3][0]};
        V S, M, Q;
        lane_tree4(p, s4, m4, q4, &S, &M, &Q);
        stats_finish4(p, src, resid, eps, lanes4_f4(S), lanes4_f4(M), lanes4_f4(Q), mean,
                      dmean, rstd);
        return;
    }
#endif
    float sl[LN_RMAX], ml[LN_RMAX], ql[LN_RMAX];
    {
#pragma GCC unroll 4
        for (unsigned lv = 0; lv < LN_LOG2W; lv++) {
            V f1, f2;
            lane_coefs(p, lv, &f1, &f2);
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++)
                tree_merge(&s[r][0], &m[r][0], &q[r][0], v_fold(s[r][0], lv),
                           v_fold(m[r][0], lv), v_fold(q[r][0], lv), f1, f2);
        }
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++) {
            sl[r] = v_lane0(s[r][0]);
            ml[r] = v_lane0(m[r][0]);
            ql[r] = v_lane0(q[r][0]);
        }
    }
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        const float m2 = ql[r];
        ln_two_sum(sl[r], ml[r], &mean[r], &dmean[r]);
        rstd[r] = ln_rstd_of(m2, p->n, eps);
        if (ln_stats_out_of_range(m2, p->n, eps))
            row_rescue(src, r, p->n, resid, 0, eps, &mean[r], &dmean[r], &rstd[r]);
    }
}

/* RMSNorm: the mean square from K accumulators per row, summed in a fixed tree. */
LN_INLINE void row_ms(const ln_plan *p, const ln_src *src, unsigned R, unsigned K, int resid,
                      float eps, float *mean, float *dmean, float *rstd)
{
    V q[LN_RMAX][LN_KMAX];
    const size_t ld = src->ld;
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            q[r][j] = v_zero();
    V qo[LN_RMAX][LN_KMAX], qc[LN_RMAX][LN_KMAX];
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
            qo[r][j] = qc[r][j] = v_zero();
    size_t off = 0;
    for (size_t b = 0; b < p->nblk; b++, off += K * LN_W) {
#pragma GCC unroll 8
        for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
            for (unsigned r = 0; r < R; r++) {
                const V v = src_vec(src, off + r * ld + j * LN_W, 0, p->tmask, resid);
                q[r][j] = v_fma(v, v, q[r][j]);
            }
        /* Squares summed in pieces of LN_RECENTER blocks, then the pieces (compensated):
           positive terms of one size round coherently, up to ~2^-24 k for a k-term running
           sum (a 2048-term lane sum of an offset row was off by ~100 ulps); in pieces the
           error is that of LN_RECENTER terms, plus the pieces' sum's ~2^-48. */
        if (b % LN_RECENTER == LN_RECENTER - 1)
#pragma GCC unroll 8
            for (unsigned j = 0; j < K; j++)
#pragma GCC unroll 4
                for (unsigned r = 0; r < R; r++) {
                    ln_kahan_add(&qo[r][j], &qc[r][j], q[r][j]);
                    q[r][j] = v_zero();
                }
    }
    if (p->nblk >= LN_RECENTER)
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
#pragma GCC unroll 8
            for (unsigned j = 0; j < K; j++)
                q[r][j] = v_add(qo[r][j], v_sub(q[r][j], qc[r][j]));
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
    V q0[LN_RMAX];
    float sums[LN_RMAX];
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
        q0[r] = q[r][0];
    hsum_rows(q0, R, sums);
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        const float ss = sums[r];
        mean[r] = dmean[r] = 0.0f;
        rstd[r] = ln_rstd_of(ss, p->n, eps);
        /* |x| above ~1e19/sqrt(n) overflows the squares, below ~1e-15 they underflow. */
        if (ln_stats_out_of_range(ss, p->n, eps))
            row_rescue(src, r, p->n, resid, 1, eps, &mean[r], &dmean[r], &rstd[r]);
    }
}

/* What the apply pass of one row needs: the center (mean + dmean) and rstd; and pf, a
   row the next statistics pass reads (or NULL), prefetched meanwhile (nta: LN_PF_NTA). */
typedef struct ln_rowc {
    float mean, dmean, rstd;
    const LN_ELEM *pf;
    int nta;
} ln_rowc;

#if defined LN_JOIN && defined LN_ELEM_F32
/*
 * A peeled row's full vectors from column i on (y + i aligned), with gamma's and beta's
 * vectors joined from aligned loads, the upper one carried to the next vector. The peel
 * aligns y, and x with it, but leaves gamma and beta off by the head, so each of their
 * loads split a cache line: rows of 1601 columns, each off by one float more than the
 * last, ran 1.22x the per-element time of 1600 (Zen 5, hot, a C driver; 1.03x with the
 * rows 1616 apart), joined 1.10x. That was while the machine ran at full speed; slowed
 * (every call ~1.3x longer, a shared host) the split cost less and the join 1.02x more,
 * both builds 1.15x. Only loads move: every element gets apply_one's operations on the
 * same values. The lines read are those of columns [i - s, i - s + 2 LN_W) within
 * [0, n), s being how far into its line the vector starts: none past gamma or beta.
 * Returns the first column left.
 */
LN_INLINE size_t apply_joined(const float *x, const float *r2, const float *g, const float *b,
                              float *y, size_t i, size_t n, V mv, V dv, V rs, int two, int ctr)
{
    const unsigned hg = ln_head_lanes(g + i), hb = ln_head_lanes(b + i);
    if (hg == 0 || hb == 0 || hg == LN_W || hb == LN_W)
        return i; /* one of them aligned already, or not float-aligned */
    const unsigned sg = LN_W - hg, sb = LN_W - hb; /* lanes into their lines */
    const unsigned lo = sg < sb ? sg : sb, hi = sg < sb ? sb : sg;
    if (i < hi && i + 2 * LN_W <= n + lo) { /* lines before the first column: one vector */
        e_store(y + i, apply_one(x, r2, g, b, i, v_tailmask(0), 0, mv, dv, rs, 1, 1, two, ctr));
        i += LN_W;
    }
    if (i < hi)
        return i;
    const VJ jg = v_join_idx(sg), jb = v_join_idx(sb);
    const float *gl = g + i - sg, *bl = b + i - sb;
    V g0 = v_load(gl), b0 = v_load(bl);
#pragma GCC unroll 4
    for (; i + 2 * LN_W <= n + lo; i += LN_W) {
        gl += LN_W;
        bl += LN_W;
        const V g1 = v_load(gl), b1 = v_load(bl);
        V v = e_load(x + i);
        if (two)
            v = v_add(v, e_load(r2 + i));
        e_store(y + i, apply_v(v, v_join(g0, g1, jg), v_join(b0, b1, jb), mv, dv, rs, 1, 1, ctr));
        g0 = g1;
        b0 = b1;
    }
    return i;
}

/*
 * A streamed row whose y is off its alignment and x off it by other lanes (y a strided
 * view, or two buffers of malloc's 16-byte alignment): peeled to y's alignment, every
 * load of x, gamma and beta split a line, and a cold call ran at 0.5-0.6x of aligned
 * rows. Here the vectors are computed at the columns' own alignment (x, gamma and beta
 * aligned where their starts are) and each y vector is joined from two of them, as the
 * backward's dx (bwd_apply_joined): 1.22x, 1.41x, 1.10x at 256, 768, 4096 columns with x
 * aligned and y 16 bytes off (Zen 4, AVX-512, 64 MiB, alternating builds). Rows whose
 * x and y share their offset (contiguous rows of 1601 columns) keep the peel: joined,
 * x's loads split instead of gamma's and beta's, 0.96-0.99x. Same values: every element
 * gets apply_one's operations. Returns 0 (nothing done) below 16 vectors.
 */
LN_INLINE int apply_stream_joined(const float *x, const float *r2, const float *g,
                                  const float *b, float *y, size_t n, V mv, V dv, V rs,
                                  int hg, int hb, int two, int ctr, const float *pf, int nta)
{
    const size_t nv = n / LN_W;
    const unsigned t = (unsigned)(n % LN_W), a = ln_head_lanes(y);
    if (a == 0 || a == LN_W || nv < LN_JOIN_MIN_VECS)
        return 0;
    const VJ jx = v_join_idx(a);
    const VM none = v_tailmask(0);
    V prev = apply_one(x, r2, g, b, 0, none, 0, mv, dv, rs, hg, hb, two, ctr);
    e_store_head(y, a, prev);
    for (size_t k = 1; k < nv; k++) {
        ln_prefetch(pf, k * LN_W, 1, nta);
        const V cur = apply_one(x, r2, g, b, k * LN_W, none, 0, mv, dv, rs, hg, hb, two, ctr);
        v_stream(y + a + (k - 1) * LN_W, v_join(prev, cur, jx));
        prev = cur;
    }
    const V cur = t ? apply_one(x, r2, g, b, nv * LN_W, v_tailmask(t), 1, mv, dv, rs, hg, hb,
                                two, ctr)
                    : v_zero();
    join_store_end(y + a + (nv - 1) * LN_W, LN_W - a + t, prev, cur, jx);
    return 1;
}
#endif

LN_INLINE void apply_row_t(const ln_plan *p, const LN_ELEM *x, const LN_ELEM *r2, const float *g,
                           const float *b, LN_ELEM *y, ln_rowc c, int hg, int hb, int two,
                           int ctr, int nt)
{
    const V mv = v_set1(c.mean), dv = v_set1(c.dmean), rs = v_set1(c.rstd);
    VM tm = p->tmask;
    const size_t n = p->n;
    size_t i = 0;
#ifdef LN_E_STREAM
    /* The apply is elementwise, so where a vector starts changes no value: a row whose y
       is not LN_VALIGN-aligned (cols not a multiple of the vector, or a strided view) goes
       out from y's first boundary on, the head before it masked. With line-wide vectors
       every unaligned store splits a cache line: a C driver (64 KiB floats, rows of 1601
       and 1025 columns) ran 1.09x faster on AVX-512, though the bench harness, whose
       buffers are page-aligned, measured 0.93-0.97x at 1601 against its 1600 (noise
       there: 0.75-1.03). With narrower vectors every other store splits and the test per
       row cost more than it gained (AVX2, 0.97x at 64-256 columns), so there only args.nt
       peels: streaming stores need the alignment. x shares y's misalignment when the
       strides do; only gamma and beta, L1-resident, then load unaligned. Rows of other
       elements (bf16: half-width stores) peel only to stream. */
    const size_t head = e_head_lanes(y);
#if defined LN_JOIN && defined LN_ELEM_F32
    if (nt && head && e_head_lanes(x) != head &&
        apply_stream_joined(x, r2, g, b, y, n, mv, dv, rs, hg, hb, two, ctr, c.pf, c.nta))
        return;
#endif
#ifdef LN_ELEM_F32
    const int peel = nt || LN_W * sizeof(float) >= 64;
#else
    const int peel = nt;
#endif
    if (peel && __builtin_expect(head != 0, 0) && head < LN_W && head + LN_W <= n) {
        const VM hm = v_tailmask((unsigned)head);
        e_store_head(y, (unsigned)head,
                     apply_one(x, r2, g, b, 0, hm, 1, mv, dv, rs, hg, hb, two, ctr));
        tm = v_tailmask((unsigned)((n - head) % LN_W));
        i = head;
#if defined LN_JOIN && defined LN_ELEM_F32
        if (!nt && hg && hb)
            i = apply_joined(x, r2, g, b, y, i, n, mv, dv, rs, two, ctr);
#endif
    }
    if (nt && (uintptr_t)(y + i) % LN_EALIGN == 0) {
#ifdef LN_LINE_PAIRS
        /* Vectors of half a line (AVX2 floats) or packed elements (a pair of bf16 vectors
           fills LN_EALIGN twice over and goes out as one store). Only whole lines stream,
           from a line boundary on, the vectors around them stored normally: a line part
           streamed and part not leaves the write-combining buffer partial, which cost rows
           of 1601 bf16 columns 0.95x on AVX-512 and 0.85x on AVX2, and float rows of 1601
           on AVX2 0.83x (avx2_vocab.h). Whole-line pairs ran cold 768 columns at 1.07x of
           32-byte streams (bf16, AVX-512). */
        while ((uintptr_t)(y + i) % 64 && i + LN_W <= n) {
            e_store(y + i, apply_one(x, r2, g, b, i, tm, 0, mv, dv, rs, hg, hb, two, ctr));
            i += LN_W;
        }
        for (; i + 2 * LN_LINE_PAIRS * LN_W <= n; i += 2 * LN_LINE_PAIRS * LN_W) {
            ln_prefetch(c.pf, i, 2 * LN_LINE_PAIRS, c.nta);
            for (size_t k = i; k < i + 2 * LN_LINE_PAIRS * LN_W; k += 2 * LN_W)
                e_stream2(y + k, apply_one(x, r2, g, b, k, tm, 0, mv, dv, rs, hg, hb, two, ctr),
                          apply_one(x, r2, g, b, k + LN_W, tm, 0, mv, dv, rs, hg, hb, two, ctr));
        }
#else
        for (; i + LN_W <= n; i += LN_W) {
            ln_prefetch(c.pf, i, 1, c.nta);
            e_stream(y + i, apply_one(x, r2, g, b, i, tm, 0, mv, dv, rs, hg, hb, two, ctr));
        }
#endif
    }
#else
    (void)nt;
#endif
    for (; i + 4 * LN_W <= n; i += 4 * LN_W) {
        ln_prefetch(c.pf, i, 4, c.nta);
        const V y0 = apply_one(x, r2, g, b, i, tm, 0, mv, dv, rs, hg, hb, two, ctr);
        const V y1 = apply_one(x, r2, g, b, i + LN_W, tm, 0, mv, dv, rs, hg, hb, two, ctr);
        const V y2 = apply_one(x, r2, g, b, i + 2 * LN_W, tm, 0, mv, dv, rs, hg, hb, two, ctr);
        const V y3 = apply_one(x, r2, g, b, i + 3 * LN_W, tm, 0, mv, dv, rs, hg, hb, two, ctr);
        e_store2(y + i, y0, y1);
        e_store2(y + i + 2 * LN_W, y2, y3);
    }
    for (; i + LN_W <= n; i += LN_W)
        e_store(y + i, apply_one(x, r2, g, b, i, tm, 0, mv, dv, rs, hg, hb, two, ctr));
    if (i < n)
        e_storem(y + i, tm, apply_one(x, r2, g, b, i, tm, 1, mv, dv, rs, hg, hb, two, ctr));
}

/* The NULL-gamma / NULL-beta cases get their own loops: no loads of implicit ones. One
   out-of-line copy per centering serves every caller (inlined into each of the statistics
   variants, the loops were most of the kernel's code); a call per row costs nothing
   beside a row's pass. */
LN_INLINE void apply_row_c(const ln_plan *p, const LN_ELEM *x, const LN_ELEM *r2, const float *g,
                           const float *b, LN_ELEM *y, ln_rowc c, int ctr, int nt)
{
    if (r2)
        apply_row_t(p, x, r2, g, b, y, c, g != NULL, b != NULL, 1, ctr, nt);
    else if (g && b)
        apply_row_t(p, x, r2, g, b, y, c, 1, 1, 0, ctr, nt);
    else if (g)
        apply_row_t(p, x, r2, g, b, y, c, 1, 0, 0, ctr, nt);
    else if (b)
        apply_row_t(p, x, r2, g, b, y, c, 0, 1, 0, ctr, nt);
    else
        apply_row_t(p, x, r2, g, b, y, c, 0, 0, 0, ctr, nt);
}

static __attribute__((noinline)) void apply_row_centered(const ln_plan *p, const LN_ELEM *x,
                                                         const LN_ELEM *r2, const float *g,
                                                         const float *b, LN_ELEM *y, ln_rowc c,
                                                         int nt)
{
    apply_row_c(p, x, r2, g, b, y, c, 1, nt);
}

static __attribute__((noinline)) void apply_row_rms(const ln_plan *p, const LN_ELEM *x,
                                                    const LN_ELEM *r2, const float *g,
                                                    const float *b, LN_ELEM *y, ln_rowc c, int nt)
{
    apply_row_c(p, x, r2, g, b, y, c, 0, nt);
}

LN_INLINE void apply_row(const ln_plan *p, const LN_ELEM *x, const LN_ELEM *r2, const float *g,
                         const float *b, LN_ELEM *y, ln_rowc c, int ctr, int nt)
{
    if (ctr)
        apply_row_centered(p, x, r2, g, b, y, c, nt);
    else
        apply_row_rms(p, x, r2, g, b, y, c, nt);
}

/*
 * The apply pass of a group of R rows with gamma and beta, column by column: each vector
 * of gamma and beta is loaded once for the R rows. On warm rows the pass is bound by
 * loads (x, gamma and beta per row and vector, beside the statistics' x): a build without
 * beta's loads ran 1.11-1.26x faster at 256-4096 columns (AVX-512, hot). Every element
 * gets apply_one's operations, so the bits are those of the row-by-row pass. The rows' y
 * share one misalignment (group_apply_ok), so one head peels them all (line-wide vectors
 * peel every misaligned row: apply_row_t).
 */
#ifdef LN_GROUP_APPLY
LN_INLINE void apply_rows_t(const ln_plan *p, unsigned R, const LN_ELEM *const *x,
                            const float *g, const float *b, LN_ELEM *const *y, const ln_rowc *c,
                            int ctr)
{
    V mv[LN_RMAX], dv[LN_RMAX], rs[LN_RMAX];
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        mv[r] = v_set1(c[r].mean);
        dv[r] = v_set1(c[r].dmean);
        rs[r] = v_set1(c[r].rstd);
    }
    VM tm = p->tmask;
    const size_t n = p->n;
    size_t i = 0;
#ifdef LN_ELEM_F32
    const size_t head = ln_head_lanes(y[0]);
    if (LN_W * sizeof(float) >= 64 && __builtin_expect(head != 0, 0) && head < LN_W &&
        head + LN_W <= n) {
        const VM hm = v_tailmask((unsigned)head);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            v_storem(y[r], hm,
                     apply_one(x[r], NULL, g, b, 0, hm, 1, mv[r], dv[r], rs[r], 1, 1, 0, ctr));
        tm = v_tailmask((unsigned)((n - head) % LN_W));
        i = head;
    }
#endif
    for (; i + 2 * LN_W <= n; i += 2 * LN_W) {
        const V g0 = v_load(g + i), g1 = v_load(g + i + LN_W);
        const V b0 = v_load(b + i), b1 = v_load(b + i + LN_W);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++) {
            const V y0 = apply_v(e_load(x[r] + i), g0, b0, mv[r], dv[r], rs[r], 1, 1, ctr);
            const V y1 = apply_v(e_load(x[r] + i + LN_W), g1, b1, mv[r], dv[r], rs[r], 1, 1, ctr);
            e_store2(y[r] + i, y0, y1);
        }
    }
    if (i + LN_W <= n) {
        const V gv = v_load(g + i), bv = v_load(b + i);
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            e_store(y[r] + i, apply_v(e_load(x[r] + i), gv, bv, mv[r], dv[r], rs[r], 1, 1, ctr));
        i += LN_W;
    }
    if (i < n)
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++)
            e_storem(y[r] + i, tm,
                     apply_one(x[r], NULL, g, b, i, tm, 1, mv[r], dv[r], rs[r], 1, 1, 0, ctr));
}

static __attribute__((noinline)) void apply_group_centered(const ln_plan *p,
                                                           const LN_ELEM *const *x,
                                                           const float *g, const float *b,
                                                           LN_ELEM *const *y, const ln_rowc *c)
{
    apply_rows_t(p, LN_GROUP_APPLY, x, g, b, y, c, 1);
}

static __attribute__((noinline)) void apply_group_rms(const ln_plan *p, const LN_ELEM *const *x,
                                                      const float *g, const float *b,
                                                      LN_ELEM *const *y, const ln_rowc *c)
{
    apply_rows_t(p, LN_GROUP_APPLY, x, g, b, y, c, 0);
}

/* Whether a group's rows of n elements, ld apart, take the grouped apply (apply_rows_t).
   Warm calls only: at memory speed (args.nt) the loads cost nothing, and four rows
   streamed and prefetched at once ran 0.77-0.79x at 256-512 columns. The working set is
   the group's x (read back from L1) and y: R rows of up to LN_GROUP_APPLY_BYTES keep it
   within half the L1. Longer rows lost (AVX-512, hot, in the bench harness's buffer
   layout: 1.07 / 1.05 / 1.03 / 1.02x at 64 / 128 / 256 / 512 columns, 1.00x at 768,
   0.93-0.95x at 1280-1600; another layout gained 1.06-1.13x at 768-1600, so there the
   layout decides, not the arithmetic). Rows a multiple of 4 KiB apart map to one L1 set
   at each column, where R rows of x and y and the vectors of gamma and beta need more
   lines than the set's 8 ways. y's rows must share one offset within an LN_VALIGN line. */
#define LN_GROUP_APPLY_BYTES 2048
LN_INLINE int group_apply_ok(size_t n, size_t ldx, size_t ldy, int cold)
{
    const size_t bytes = ldy * sizeof(LN_ELEM);
    if (cold || n * sizeof(LN_ELEM) > LN_GROUP_APPLY_BYTES || bytes % 4096 == 0 ||
        ldx * sizeof(LN_ELEM) % 4096 == 0)
        return 0;
#ifdef LN_ELEM_F32
    return LN_W * sizeof(float) < 64 || bytes % LN_VALIGN == 0;
#else
    return 1; /* bf16 rows never peel */
#endif
}
#endif /* LN_GROUP_APPLY */

/* Rows r .. r + R - 1 of those before r1; each apply pass prefetches the row `ahead` rows
   on (0: none). mode: bit 0 RMSNorm, bit 1 residual; grouped: the apply pass runs
   column by column over the R rows (fwd_grouped; constants per instantiation). */
LN_INLINE void forward_group(const ln_body_fwd_args *a, const ln_plan *p, size_t r, size_t r1,
                             size_t ahead, unsigned R, unsigned K, unsigned mode, int grouped)
{
    const int rms = mode & 1, resid = (mode & 2) != 0;
    const size_t ld = a->ldx;
    const ln_src src = {a->x + r * ld, resid ? a->residual + r * ld : NULL,
                        resid && a->sum ? a->sum + r * ld : NULL, ld};
    float mean[LN_RMAX], dmean[LN_RMAX], rstd[LN_RMAX];
    if (rms)
        row_ms(p, &src, R, K, resid, a->eps, mean, dmean, rstd);
    else
        row_stats(p, &src, R, K, resid, a->eps, mean, dmean, rstd, NULL);
#ifdef LN_GROUP_APPLY
    if (grouped) {
        const LN_ELEM *xs[LN_RMAX];
        LN_ELEM *ys[LN_RMAX];
        ln_rowc cs[LN_RMAX];
        for (unsigned i = 0; i < R; i++) {
            xs[i] = (src.sum ? src.sum : src.x) + i * ld;
            ys[i] = a->y + (r + i) * a->ldy;
            cs[i] = (ln_rowc){mean[i], dmean[i], rstd[i], NULL, 0};
            if (a->mean)
                a->mean[r + i] = mean[i];
            if (a->rstd)
                a->rstd[r + i] = rstd[i];
        }
        for (unsigned i = 0; i < R; i += LN_GROUP_APPLY) {
            if (rms)
                apply_group_rms(p, xs + i, a->gamma, a->beta, ys + i, cs + i);
            else
                apply_group_centered(p, xs + i, a->gamma, a->beta, ys + i, cs + i);
        }
        return;
    }
#else
    (void)grouped;
#endif
    for (unsigned i = 0; i < R; i++) {
        /* The apply pass reads s back from sum when stored, else recomputes x + residual. */
        const LN_ELEM *v1 = src.sum ? src.sum + i * ld : src.x + i * ld;
        const LN_ELEM *v2 = resid && !src.sum ? src.res + i * ld : NULL;
        const size_t nx = r + ahead + i;
        const ln_rowc c = {mean[i], dmean[i], rstd[i], ahead && nx < r1 ? a->x + nx * ld : NULL,
                           LN_PF_NTA(a)};
        apply_row(p, v1, v2, a->gamma, a->beta, a->y + (r + i) * a->ldy, c, !rms, LN_NT(a));
        if (a->mean)
            a->mean[r + i] = mean[i];
        if (a->rstd)
            a->rstd[r + i] = rstd[i];
    }
}

/* Up to this many columns rows run in groups (mode: bit 0 RMSNorm). RMSNorm keeps the
   common bound: its statistics are a sum of squares with no merge chain to hide, and on
   AVX-512 the four-row groups ran 9-15 % slower than single rows at 1024-2048 columns. */
LN_INLINE size_t fwd_small_cols(unsigned mode)
{
    return (mode & 1) ? LN_SMALL_COLS : LN_FWD_SMALL_COLS;
}

#ifdef LN_GROUP_APPLY
/* Whether this call's groups of LN_RFWD rows take the grouped apply: decided per call,
   and the grouped calls run a loop of their own, so neither loop holds the other's code.
   One loop holding both (the choice made per group) ran the warm forward 0.93-0.98x at
   64-256 columns (AVX-512 and AVX2, paired) against this split. */
LN_INLINE int fwd_grouped(const ln_body_fwd_args *a, const ln_plan *p, unsigned mode)
{
    return LN_RFWD > 1 && a->gamma && a->beta && !((mode & 2) && !a->sum) &&
           group_apply_ok(p->n, a->ldx, a->ldy, LN_COLD(a));
}

/* Warm short rows' full groups, grouped (never prefetched: fwd_grouped excludes cold
   calls). Returns the first row left for forward_rows' single rows. */
LN_INLINE size_t forward_groups_grouped(const ln_body_fwd_args *a, const ln_plan *p, size_t r,
                                        size_t r1, unsigned mode)
{
    for (; r + LN_RFWD <= r1; r += LN_RFWD)
        forward_group(a, p, r, r1, 0, LN_RFWD, LN_KSMALL, mode, 1);
    return r;
}

/* Out of line, each mode a constant in its own copy. */
static __attribute__((noinline)) size_t forward_grouped(const ln_body_fwd_args *a,
                                                        const ln_plan *p, size_t r0, size_t r1,
                                                        unsigned mode)
{
    switch (mode) {
    case 0: return forward_groups_grouped(a, p, r0, r1, 0);
    case 1: return forward_groups_grouped(a, p, r0, r1, 1);
    case 2: return forward_groups_grouped(a, p, r0, r1, 2);
    default: return forward_groups_grouped(a, p, r0, r1, 3);
    }
}
#endif

LN_INLINE void forward_rows(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1,
                            unsigned mode)
{
    size_t r = r0;
    const size_t ahead = LN_COLD(a) ? ln_prefetch_rows(p->n, 1, LN_PF_ROW_BYTES(a)) : 0;
#if defined LN_FWD_COLD_GROUP_COLS && defined LN_ELEM_F32
    /* Cold rows above the vocabulary's bound run one at a time with the groups' K (the
       same bits: a row's operations do not depend on R). See its definition. */
    if (LN_COLD(a) && p->n > LN_FWD_COLD_GROUP_COLS && p->n <= fwd_small_cols(mode)) {
        for (; r < r1; r++)
            forward_group(a, p, r, r1, ahead, 1, LN_KSMALL, mode, 0);
        return;
    }
#endif
    if (p->n <= fwd_small_cols(mode)) {
        const size_t ag = LN_COLD(a) ? ln_prefetch_rows(p->n, LN_RFWD, LN_PF_ROW_BYTES(a)) : 0;
#ifdef LN_GROUP_APPLY
        /* Fewer rows than a group (one-row calls) leave forward_grouped nothing to do. */
        if (r1 - r0 >= LN_RFWD && fwd_grouped(a, p, mode))
            r = forward_grouped(a, p, r0, r1, mode);
        else
#endif
            for (; r + LN_RFWD <= r1; r += LN_RFWD)
                forward_group(a, p, r, r1, ag, LN_RFWD, LN_KSMALL, mode, 0);
        /* The rows after the last group, interleaved as well (a row's bits do not depend
           on R): one at a time they waited on one reduction chain after another. */
        const size_t left = r1 - r;
        if (LN_RFWD > 3 && left == 3)
            forward_group(a, p, r, r1, ahead, 3, LN_KSMALL, mode, 0);
        else if (LN_RFWD > 2 && left == 2)
            forward_group(a, p, r, r1, ahead, 2, LN_KSMALL, mode, 0);
        else if (left == 1)
            forward_group(a, p, r, r1, ahead, 1, LN_KSMALL, mode, 0);
    } else {
        for (; r < r1; r++)
            forward_group(a, p, r, r1, ahead, 1, LN_KBIG, mode, 0);
    }
}

/* LayerNorm with gamma and beta (the common case), groups of R rows from r0 on: group
   g's apply pass runs inside group g+1's statistics pass. Returns the first row left.
   Out of line: inlined beside forward_rows, its loop's register allocation followed the
   other path's code (AVX2 ran 6 % slower at 768-1601 columns when that grew). */
static __attribute__((noinline)) size_t forward_pipelined(const ln_body_fwd_args *a,
                                                          const ln_plan *p, size_t r0,
                                                          size_t r1, unsigned R, unsigned K)
{
    if (r1 - r0 < R)
        return r0;
    const size_t ld = a->ldx;
    float mean[LN_RMAX], dmean[LN_RMAX], rstd[LN_RMAX];
    ln_src src = {a->x + r0 * ld, NULL, NULL, ld};
    row_stats(p, &src, R, K, 0, a->eps, mean, dmean, rstd, NULL);
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
            fz.dv[i] = v_set1(dmean[i]);
            fz.rs[i] = v_set1(rstd[i]);
        }
        if (r1 - r < 2 * R) {
            for (unsigned i = 0; i < R; i++) {
                const ln_rowc c = {mean[i], dmean[i], rstd[i], NULL, 0};
                apply_row(p, fz.x[i], NULL, fz.g, fz.b, fz.y[i], c, 1, 0);
            }
            return r + R;
        }
        src.x = a->x + (r + R) * ld;
        row_stats(p, &src, R, K, 0, a->eps, mean, dmean, rstd, &fz);
    }
}

static void forward_plain(const ln_body_fwd_args *a, const ln_plan *p, size_t r0, size_t r1)
{
    /* Short rows are bound by their reductions' latency instead, which interleaving
       rows hides better (pipelining 4-row groups spilled and ran 1.4x slower). Streamed
       outputs (args.nt) go through the separate apply pass, which has the NT stores; so
       do cold rows over 4 KiB that do not stream (bf16 on Arm; measured on x86 before
       its bf16 streamed): paired, cold, 1.20x at 4096 and
       1.17x at 8192 columns (AVX-512), 1.23x at 4096 (AVX2), where shorter ones lost
       (AVX2: 0.91x at 512, 0.97x at 2048). */
    const int split = LN_NT(a) || (LN_COLD(a) && p->n * sizeof(LN_ELEM) > 4096);
    if (a->gamma && a->beta && p->n > fwd_small_cols(0) && !split)
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
    const unsigned mode = ((a->flags & LN_FLAG_RMS_NORM) ? 1u : 0u) | (a->residual ? 2u : 0u);
    ln_plan p;
    plan_get(&p, a->cols, a->cols <= fwd_small_cols(mode) ? LN_KSMALL : LN_KBIG);
    variants[mode](a, &p, r0, r1);
#ifdef LN_E_STREAM
    if (LN_NT(a))
        v_nt_fence(); /* the streamed lines are visible before the call returns */
#endif
}

#endif /* LN_KERNELS_FORWARD_H */
