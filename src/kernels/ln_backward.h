/* ln_backward.h - the LayerNorm / RMSNorm backward body, over the vocabulary of ln_common.h. */
#ifndef LN_KERNELS_BACKWARD_H
#define LN_KERNELS_BACKWARD_H

#include "kernels/ln_common.h"
#include "kernels/tiny_backward.h"

/* dx streams (args.nt) where the element type streams, unless its kernel file keeps the
   backward's prefetched ordinary stores (LN_BWD_NO_STREAM: measured faster there). */
#if defined LN_E_STREAM && !defined LN_BWD_NO_STREAM
#define LN_BWD_STREAM 1
#endif

/* Per-row state of a backward group: pointers, the reduce pass's sums, dx's constants. */
typedef struct ln_bwd_rows {
    const LN_ELEM *x[LN_RMAX], *dy[LN_RMAX];
    LN_ELEM *dx[LN_RMAX];
    const float *gamma;
    float *dg, *db;
    float *fdg, *fdb;      /* the call's last group: args.acc_dg/acc_db (else NULL) */
    int hg, hdg, hdb, hdx; /* which operands exist: constants in the `full` instantiations */
    int rms, acc;          /* LN_FLAG_RMS_NORM, LN_FLAG_ACCUMULATE: constants too */
    int pfdx;              /* a cold call's dx not streamed: pass A prefetches it */
    int lines;             /* a streamed dx streams whole lines only (bwd_stream_lines) */
    int nta;               /* a cold call's hints as prefetchnta (LN_PF_NTA) */
    size_t ax, ady, adx;   /* a cold call: the row `ahead` rows on, as offsets (0: none) */
    V mv[LN_RMAX];                                        /* the saved (float) mean */
    V sg[LN_RMAX][2], sx[LN_RMAX][2], sd[LN_RMAX][2];     /* sum g, g (x - mean), x - mean */
    V rs[LN_RMAX], kd[LN_RMAX], kb[LN_RMAX], kc[LN_RMAX]; /* see bwd_constants */
} ln_bwd_rows;

/* Pass A's sums of row i for one vector: x - mean in xc, dy in dv, gamma's vector in gv;
   u picks the sums (alternating vectors shortens each sum's dependency chain). */
LN_INLINE void bwd_reduce_row(ln_bwd_rows *w, unsigned i, V gv, V xc, V dv, unsigned u)
{
    if (w->hdx) {
        const V g = w->hg ? v_mul(dv, gv) : dv;
        w->sg[i][u] = v_add(w->sg[i][u], g);
        w->sx[i][u] = v_fma(g, xc, w->sx[i][u]);
    }
    if (!w->rms)
        w->sd[i][u] = v_add(w->sd[i][u], xc);
}

/* Pass A on the vector at column c for R rows: per row sum(g), sum(g (x - mean)) and
   sum(x - mean), with the float mean. Nothing is stored: these sums stay in registers. */
LN_INLINE void bwd_reduce_vec(ln_bwd_rows *w, size_t c, int tail, VM tm, unsigned u, unsigned R)
{
    const V gv = w->hg && w->hdx ? load_t(w->gamma + c, tail, tm) : v_zero();
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++)
        bwd_reduce_row(w, i, gv, centered_t(w->x[i] + c, w->mv[i], tail, tm),
                       w->hdx ? eload_t(w->dy[i] + c, tail, tm) : v_zero(), u);
}

#if defined LN_JOIN && defined LN_ELEM_F32
/*
 * Pass A of one streamed row (R = 1) whose x is not LN_VALIGN-aligned, with the loads of
 * its middle aligned to x and yet the same bits as bwd_reduce_vec's loop. Rows of 1601
 * columns, each off by one float more than the last, ran the cold backward at 1.14-1.26x
 * the per-element time of 1600 in the published sweeps; every load of theirs split a
 * line. Loading each vector joined from two aligned lines instead (v_join) kept the bits
 * but ran 0.76-0.88x of an aligned pass A, which did not keep them.
 * How the bits stay: shifted by h = the head's lanes, lane p of the middle's vectors holds
 * the column that the plain loop's lane l = (p + h) mod LN_W holds, in the same order, and
 * that column went to the other of the two sums (u) exactly when l < h (it sits one plain
 * vector further on). So each lane's sums receive the same additions in the same order,
 * only in other lanes and, for l < h, with u swapped; sum 0 + sum 1 commutes, and one
 * two-source permute per sum puts every lane back before the horizontal tree. The head
 * (plain vector 0's lanes below h) is the middle's vector -1 (sum 1, first); plain vector
 * k', for the middle's last vector k' - 1, still needs its lanes from h on. Masked-off
 * lanes add exact zeros, which change no sum: the sums start at +0, and round-to-nearest
 * gives -0 only for -0 + -0. Rows shorter than LN_ALIGNED_MIN_VECS vectors lost more to
 * the permutes than they gained (100-200 columns: 0.94-0.99x) and keep the plain loop.
 * Returns the first plain column left, an even number of vectors in, or 0 (not taken).
 */
#define LN_ALIGNED_MIN_VECS 32
LN_INLINE size_t bwd_reduce_aligned(ln_bwd_rows *w, size_t n)
{
    const unsigned h = ln_head_lanes(w->x[0]);
    const size_t nv = n / LN_W;
    if (h == 0 || h == LN_W || nv < LN_ALIGNED_MIN_VECS)
        return 0;
    const size_t kend = (nv - 1) & ~(size_t)1; /* middle vectors 0 .. kend - 1 */
    /* Columns 0 .. h - 1, loaded masked from the row's start and moved to the top lanes
       (lanes below get zeros). Loading them masked from the line before would read no
       byte before the row either, but a masked-off lane on an unmapped page costs a
       microcode assist: gamma, malloc'ed, made 100 columns run 0.36x. */
    const VM low = v_tailmask(h);
    const VJ up = v_join_idx(h);
    const V z = v_zero();
    bwd_reduce_row(w, 0, w->hg && w->hdx ? v_join(z, v_loadm(w->gamma, low), up) : z,
                   v_join(z, v_subz(v_loadm(w->x[0], low), w->mv[0], low), up),
                   w->hdx ? v_join(z, v_loadm(w->dy[0], low), up) : z, 1);
    const VM none = v_tailmask(0);
    for (size_t k = 0; k < kend; k += 2) {
        bwd_reduce_vec(w, h + k * LN_W, 0, none, 0, 1);
        bwd_reduce_vec(w, h + (k + 1) * LN_W, 0, none, 1, 1);
    }
    /* Back to the plain loop's lanes: lane l takes lane l - h of the same sum, or for
       l < h lane l - h + LN_W of the other (v_join reads its index mod 2 LN_W). */
    const VJ back = v_join_idx(2 * LN_W - h);
    const V g0 = w->sg[0][0], x0 = w->sx[0][0], d0 = w->sd[0][0];
    w->sg[0][0] = v_join(g0, w->sg[0][1], back);
    w->sg[0][1] = v_join(w->sg[0][1], g0, back);
    w->sx[0][0] = v_join(x0, w->sx[0][1], back);
    w->sx[0][1] = v_join(w->sx[0][1], x0, back);
    w->sd[0][0] = v_join(d0, w->sd[0][1], back);
    w->sd[0][1] = v_join(w->sd[0][1], d0, back);
    bwd_reduce_vec(w, kend * LN_W, 1, v_headmask(h), 0, 1); /* plain vector kend, lanes h on */
    if (kend + 1 < nv) /* nv even: the plain loop's last full vector, in sum 1 */
        bwd_reduce_vec(w, (kend + 1) * LN_W, 0, none, 1, 1);
    return nv * LN_W; /* the tail, if any, goes to sum 1 as in the plain loop */
}
#endif

/*
 * Per-row constants of pass B, from pass A's sums, in double (a few operations per row).
 * The saved mean m is the float rounding of the row's mean mu, off by up to |mu| 2^-24,
 * which next to a small spread (an offset row) is most of x - mu. The row itself says by
 * how much: delta = sum(x - m) / n = mu - m up to the rounding of a sum of small values,
 * so x - mu = (x - m) - delta (x - m is exact where x is within a factor 2 of m). Hence
 *   xhat = (x - m) rstd + kd,        kd = -delta rstd
 *   sum(g xhat) = rstd (sum(g (x - m)) - delta sum(g))
 *   dx = rstd g + kb xhat + kc,      kb = -rstd mean(g xhat), kc = -rstd mean(g)
 * (RMSNorm: delta = 0, no mean(g) term). Returns 0 when a sum or constant is not finite.
 */
LN_INLINE int bwd_constants(ln_bwd_rows *w, unsigned i, float mean, float rstd, double inv_n,
                            float sum_g, float sum_d, float sum_x)
{
    const double r = rstd;
    const double sg = w->rms ? 0.0 : (double)sum_g;
    double d = w->rms ? 0.0 : ln_mean_fix((double)sum_d * inv_n, mean);
    /* A NaN or Inf in x spoils only its own column of dgamma (each xhat is its own x's):
       no correction for such a row. A sum that overflowed on finite values fails the row
       below, and the caller rescues it. */
    const int dok = isfinite(d);
    if (!dok)
        d = 0.0;
    double kb = 0.0, kc = 0.0;
    if (w->hdx) {
        const double sx = (double)sum_x;
        kb = -r * r * (sx - d * sg) * inv_n;
        kc = -r * sg * inv_n;
    }
    const float fd = (float)(-d * r), fb = (float)kb, fc = (float)kc;
    w->rs[i] = v_set1(rstd);
    w->kd[i] = v_set1(fd);
    w->kb[i] = v_set1(fb);
    w->kc[i] = v_set1(fc);
    return dok && isfinite(fd) && isfinite(fb) && isfinite(fc) && isfinite(rstd);
}

#ifdef LN_TREE4_POS
/* bwd_constants for a four-row group at once, the rows in the lanes of four-lane vectors:
   the same IEEE operations per row (so the same bits), without the scalar code's ~35
   instructions and four branches per row, a chain from pass A's sums to pass B that
   short rows wait on (AVX-512, hot, two builds in one process, calls alternating, three
   runs: 1.00-1.11x at 64 columns, 1.02-1.12x at 128-512, 1.06-1.13x at 100; AVX2's row
   pairs, in half-empty vectors, ran 0.89-0.99x over five runs, so pairs and single rows
   keep bwd_constants, this function's twin; a row given its neighbour's kc here failed
   seven ctest entries). Returns a mask of the rows (bit i) for which bwd_constants would
   return 0. */
LN_INLINE unsigned bwd_constants4(ln_bwd_rows *w, const float *mean, const float *rstd,
                                  double inv_n, ln_f4 gf, ln_f4 df, ln_f4 xf)
{
    ln_f4 rf, mf = {0};
    __builtin_memcpy(&rf, rstd, sizeof rf);
    if (!w->rms)
        __builtin_memcpy(&mf, mean, sizeof mf);
    const ln_d4 zero = {0}, r = LN_F4_TO_D4(rf);
    const ln_d4 sg = w->rms ? zero : LN_F4_TO_D4(gf);
    const ln_d4 d0 = w->rms ? zero : LN_F4_TO_D4(df) * inv_n, dd = d0 - d0;
    ln_d4 dl;
#pragma GCC unroll 4
    for (unsigned i = 0; i < 4; i++) /* the single rows' limit itself: the same bits */
        dl[i] = ln_mean_fix(d0[i], mf[i]);
    const ln_d4 d = (ln_d4)((ln_l4)dl & (dd == zero)); /* dd: 0 where d0 is finite */
    ln_d4 kb = zero, kc = zero;
    if (w->hdx) {
        const ln_d4 sx = LN_F4_TO_D4(xf);
        kb = -r * r * (sx - d * sg) * inv_n;
        kc = -r * sg * inv_n;
    }
    const ln_f4 fd = LN_D4_TO_F4(-d * r), fb = LN_D4_TO_F4(kb), fc = LN_D4_TO_F4(kc), fz = {0};
    const ln_i4 ok = (LN_D4_TO_F4(dd) == fz) & (fd - fd == fz) & (fb - fb == fz) &
                     (fc - fc == fz) & (rf - rf == fz);
#pragma GCC unroll 4
    for (unsigned i = 0; i < 4; i++) {
        w->rs[i] = v_set1(rf[i]);
        w->kd[i] = v_set1(fd[i]);
        w->kb[i] = v_set1(fb[i]);
        w->kc[i] = v_set1(fc[i]);
    }
    return LN_I4_BAD(ok);
}
#endif

/* A cold call's hints for the span [c, c + 2 LN_W) of the group `ahead` rows on: its x
   and dy, and its dx (with intent to write) unless dx streams or is float ACCUMULATE's
   (backward_group). Issued from pass B, which reads from L1 and leaves the memory idle
   (kernels/ln_common.h). */
LN_INLINE void bwd_prefetch(const ln_bwd_rows *w, size_t c, unsigned R)
{
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        ln_prefetch(w->x[i] + w->ax, c, 2, w->nta);
        ln_prefetch(w->dy[i] + w->ady, c, 2, w->nta);
        if (w->adx)
            ln_prefetchw(w->dx[i] + w->adx, c, 2);
    }
}

/* A vector of the partials: into the block's, or in the call's last group of an
   accumulating call (f: args.acc_dg/acc_db) added to the caller's values, part + acc as
   ln_fold_partials adds them. The kernel's partials then never make a second trip
   through L2: with that pass of its own after the kernel, 4 rows of 16384 columns took
   1.22x the time of the plain call. */
LN_INLINE void bwd_store_part(float *restrict p, float *restrict f, size_t c, V v, int tail,
                              VM tm, int fold)
{
    if (fold)
        store_t(f + c, v_add(v, load_t(f + c, tail, tm)), tail, tm);
    else
        store_t(p + c, v, tail, tm);
}

/* Pass B on the vector at column c for R rows: dx (three multiply-adds and a subtraction
   per vector beyond the loads), then the rows' dy xhat and dy added to the partials in row
   order, so the partials never depend on R. Loads precede the store: dx may be dy. With
   `out`, the rows' dx vectors go there instead, for the caller to store. */
LN_INLINE void bwd_apply_vec(const ln_bwd_rows *w, float *restrict dg, float *restrict db,
                             size_t c, int tail, VM tm, unsigned R, int first, int fold,
                             int stream, V *out)
{
#ifndef LN_BWD_STREAM
    (void)stream; /* this element type does not stream */
#endif
    V gv = v_zero(), vdg = v_zero(), vdb = v_zero();
    if (w->hg && w->hdx)
        gv = load_t(w->gamma + c, tail, tm);
    if (w->hdg && !first)
        vdg = load_t(dg + c, tail, tm);
    if (w->hdb && !first)
        vdb = load_t(db + c, tail, tm);
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        const V dv = eload_t(w->dy[i] + c, tail, tm);
        const V xc = centered_t(w->x[i] + c, w->mv[i], tail, tm);
        const V xh = w->rms ? v_mul(xc, w->rs[i]) : v_fma(xc, w->rs[i], w->kd[i]);
        if (w->hdx) {
            const V g = w->hg ? v_mul(dv, gv) : dv;
            V v = v_fma(w->rs[i], g, v_fma(w->kb[i], xh, w->kc[i]));
            if (w->acc)
                v = v_add(eload_t(w->dx[i] + c, tail, tm), v);
            if (out)
                out[i] = v;
#ifdef LN_BWD_STREAM
            else if (stream)
                e_stream(w->dx[i] + c, v);
            else
#endif
                estore_t(w->dx[i] + c, v, tail, tm);
        }
        vdg = v_fma(dv, xh, vdg);
        vdb = v_add(vdb, dv);
    }
    if (w->hdg)
        bwd_store_part(dg, w->fdg, c, vdg, tail, tm, fold && w->fdg);
    if (w->hdb)
        bwd_store_part(db, w->fdb, c, vdb, tail, tm, fold && w->fdb);
}

/* Whether row r's operands are all finite. A row holding a NaN or Inf gives NaN where
   its values reach, as it should; only a row of finite values is worth a rescue. */
static int bwd_row_finite(const ln_body_bwd_args *a, size_t r, int rms)
{
    if (!isfinite(a->rstd[r]) || (!rms && !isfinite(a->mean[r])))
        return 0;
    const LN_ELEM *x = a->x + r * a->ldx, *dy = a->dy + r * a->lddy;
    for (size_t i = 0; i < a->cols; i++)
        if (!isfinite(e_get(x + i)) || !isfinite(e_get(dy + i)) ||
            (a->gamma && !isfinite(a->gamma[i])))
            return 0;
    return 1;
}

/* Pass B over columns [c0, n): full vectors from c0 (streamed when `stream`), then the
   tail under its mask. The partials' pointers are locals: kept in registers. */
LN_INLINE void bwd_apply_cols(const ln_bwd_rows *w, size_t c0, size_t n, unsigned R, int first,
                              int fold, int stream, int pf)
{
    float *restrict dg = w->dg, *restrict db = w->db;
    const VM tm = v_tailmask((unsigned)((n - c0) % LN_W));
    size_t c = c0;
#if defined LN_BWD_STREAM && defined LN_HAVE_E_STREAM2
    if (stream) { /* whole lines in pairs, the rest stored normally: as the forward's apply */
        while ((uintptr_t)(w->dx[0] + c) % 64 && c + LN_W <= n) {
            bwd_apply_vec(w, dg, db, c, 0, tm, R, first, fold, 0, NULL);
            c += LN_W;
        }
        for (; c + 2 * LN_LINE_PAIRS * LN_W <= n; c += 2 * LN_LINE_PAIRS * LN_W)
            for (size_t k = c; k < c + 2 * LN_LINE_PAIRS * LN_W; k += 2 * LN_W) {
                V lo[LN_RMAX] = {v_zero()}, hi[LN_RMAX] = {v_zero()}; /* all written: dx streams */
                if (pf)
                    bwd_prefetch(w, k, R);
                bwd_apply_vec(w, dg, db, k, 0, tm, R, first, fold, 0, lo);
                bwd_apply_vec(w, dg, db, k + LN_W, 0, tm, R, first, fold, 0, hi);
#pragma GCC unroll 4
                for (unsigned i = 0; i < R; i++)
                    e_stream2(w->dx[i] + k, lo[i], hi[i]);
            }
        stream = 0;
    }
#endif
    size_t end = n; /* the pairs of vectors end here: streamed ones, whole lines if w->lines */
#if defined LN_BWD_STREAM && defined LN_BWD_STREAM_LINES
    if (stream && w->lines) { /* the vocabulary's reason */
        if ((uintptr_t)(w->dx[0] + c) % 64 && c + LN_W <= n) {
            bwd_apply_vec(w, dg, db, c, 0, tm, R, first, fold, 0, NULL);
            c += LN_W;
        }
        end = c + (n - c) / (2 * LN_W) * (2 * LN_W);
    }
#endif
    for (; c + 2 * LN_W <= end; c += 2 * LN_W) {
        if (pf)
            bwd_prefetch(w, c, R);
        bwd_apply_vec(w, dg, db, c, 0, tm, R, first, fold, stream, NULL);
        bwd_apply_vec(w, dg, db, c + LN_W, 0, tm, R, first, fold, stream, NULL);
    }
    if (c + LN_W <= n) { /* a line's first half: in lines, shared with what follows */
        bwd_apply_vec(w, dg, db, c, 0, tm, R, first, fold, stream && !w->lines, NULL);
        c += LN_W;
    }
    if (c < n)
        bwd_apply_vec(w, dg, db, c, 1, tm, R, first, fold, 0, NULL);
}

#if defined LN_JOIN && defined LN_ELEM_F32
/*
 * Pass B of a warm group whose dx rows are not all LN_VALIGN-aligned, with every dx store
 * aligned. The columns run as in bwd_apply_cols (so gamma, the partials and every value
 * are the same, and x and dy load as before); only dx's vectors are regrouped: row i's
 * aligned block k starts a_i columns (its head) into plain vector k and ends a_i lanes
 * into vector k + 1, one two-source permute (v_join) of the two. With line-wide vectors
 * every unaligned store splits a line: rows of 1601 columns, each one float further off
 * than the last, ran the hot backward at 1.62x the per-element time of 1600 (Intel,
 * AVX-512; rows padded to 1616 floats: 1.01x; only dx padded: 1.21x, so the split stores
 * cost most of it). dx may be dy: block k - 1 is stored after vector k's loads, and no
 * later load reaches its columns. Returns 0 (nothing done) when the rows are aligned
 * already, not float-aligned, or shorter than LN_JOIN_MIN_VECS vectors: four-row groups
 * of 50-200 columns ran 1.09-1.22x slower joined (the per-row head and end cost more
 * than the split stores they saved), 257-300 columns 0.96-1.01x.
 * A cold call's streamed dx (`nt`, with the hints of bwd_apply_cols when `pf`) takes it
 * too: streaming from dx's first boundary instead left gamma's and the partials' loads
 * and stores off their alignment, and a cold call with dx off it ran at half the speed
 * (Zen 4, AVX-512, 64 MiB operands, alternating builds: x aligned and dx 16 bytes off,
 * 1.88x faster at 256 columns, 1.50x at 768, 1.32x at 4096; contiguous rows of 777,
 * 1025, 1601, 4097 columns 1.47x, 1.24x, 1.28x, 1.20x).
 */
LN_INLINE int bwd_apply_joined(const ln_bwd_rows *w, size_t n, unsigned R, int first,
                               int fold, int nt, int pf)
{
    const size_t nv = n / LN_W;
    const unsigned t = (unsigned)(n % LN_W);
    uintptr_t mis = 0;
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++)
        mis |= (uintptr_t)w->dx[i] % LN_VALIGN;
    if (mis == 0 || mis % sizeof(float) || nv < LN_JOIN_MIN_VECS)
        return 0;
    unsigned a[LN_RMAX];
    VJ jx[LN_RMAX];
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        a[i] = ln_head_lanes(w->dx[i]);
        jx[i] = v_join_idx(a[i]);
    }
    float *restrict dg = w->dg, *restrict db = w->db;
    const VM none = v_tailmask(0);
    V prev[LN_RMAX] = {v_zero()}, cur[LN_RMAX] = {v_zero()}; /* all written: dx is there */
    bwd_apply_vec(w, dg, db, 0, 0, none, R, first, fold, 0, prev);
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++)
        if (a[i])
            e_store_head(w->dx[i], a[i], prev[i]);
    for (size_t k = 1; k < nv; k++) {
        if (pf && k % 2)
            bwd_prefetch(w, (k - 1) * LN_W, R);
        bwd_apply_vec(w, dg, db, k * LN_W, 0, none, R, first, fold, 0, cur);
#pragma GCC unroll 4
        for (unsigned i = 0; i < R; i++) {
            float *d = w->dx[i] + a[i] + (k - 1) * LN_W;
            if (nt)
                v_stream(d, v_join(prev[i], cur[i], jx[i]));
            else
                v_store(d, v_join(prev[i], cur[i], jx[i]));
            prev[i] = cur[i];
        }
    }
    /* Left per row: lanes a_i on of the last full vector, then the tail's t lanes. */
    if (t)
        bwd_apply_vec(w, dg, db, nv * LN_W, 1, v_tailmask(t), R, first, fold, 0, cur);
    else
#pragma GCC unroll 4
        for (unsigned i = 0; i < R; i++)
            cur[i] = v_zero();
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++)
        join_store_end(w->dx[i] + a[i] + (nv - 1) * LN_W, LN_W - a[i] + t, prev[i], cur[i],
                       jx[i]);
    return 1;
}
#else
LN_INLINE int bwd_apply_joined(const ln_bwd_rows *w, size_t n, unsigned R, int first,
                               int fold, int nt, int pf)
{
    (void)w, (void)n, (void)R, (void)first, (void)fold, (void)nt, (void)pf;
    return 0; /* no two-source permute, or bf16 rows */
}
#endif

/* args.nt where the element type streams (float; bf16 on x86). */
LN_INLINE unsigned bwd_nt(const ln_body_bwd_args *a)
{
#ifdef LN_BWD_STREAM
    return a->nt;
#else
    (void)a;
    return 0;
#endif
}

/* Whether a streamed dx goes out in whole 64-byte lines only (LN_BWD_STREAM_LINES): unless
   its rows are contiguous and without a tail, when every line a row shares with the next
   holds two streamed vectors. */
LN_INLINE int bwd_stream_lines(const ln_body_bwd_args *a, size_t n)
{
#ifdef LN_BWD_STREAM_LINES
    return n % LN_W != 0 || a->lddx != n;
#else
    (void)a, (void)n;
    return 0;
#endif
}

/* Non-temporal dx: every row of the group must reach alignment after the same head (the
   columns are shared); the head goes out as one masked vector with ordinary stores.
   Pairs (LN_HAVE_E_STREAM2) go on to a line boundary, so there the rows share their
   offset in a line. Returns the head, or LN_W + 1 when the group cannot stream. */
LN_INLINE unsigned bwd_stream_head(const ln_bwd_rows *w, unsigned R, size_t n)
{
#ifdef LN_BWD_STREAM
    const unsigned h = e_head_lanes(w->dx[0]);
#if defined LN_STREAM_NO_HEAD && defined LN_ELEM_F32
    if (h)
        return LN_W + 1; /* the vocabulary's reason */
#endif
    for (unsigned i = 1; i < R; i++)
#if defined LN_HAVE_E_STREAM2
        if ((uintptr_t)w->dx[i] % 64 != (uintptr_t)w->dx[0] % 64)
#elif defined LN_BWD_STREAM_LINES
        if (w->lines ? (uintptr_t)w->dx[i] % 64 != (uintptr_t)w->dx[0] % 64
                     : e_head_lanes(w->dx[i]) != h)
#else
        if (e_head_lanes(w->dx[i]) != h)
#endif
            return LN_W + 1;
    return h < LN_W && n >= h + 4 * LN_W ? h : LN_W + 1;
#else
    (void)w, (void)R, (void)n;
    return LN_W + 1; /* this element type does not stream */
#endif
}

/* Pass B of a group: a streamed dx's head h (<= LN_W; else it does not stream; rows with
   a head stream joined where they can), prefetch hints `ahead`, joined stores; `fold` into
   args.acc_dg/acc_db (backward_group). The loop with hints is a copy of its own: warm
   calls run the loop without them. */
LN_INLINE void bwd_apply_pass(const ln_bwd_rows *w, size_t n, unsigned R, unsigned h,
                              size_t ahead, int first, int fold, int join)
{
    if (h > LN_W) {
        if (ahead)
            bwd_apply_cols(w, 0, n, R, first, fold, 0, 1);
        else if (!(join && bwd_apply_joined(w, n, R, first, fold, 0, 0)))
            bwd_apply_cols(w, 0, n, R, first, fold, 0, 0);
    } else {
        if (h) {
            if (ahead ? bwd_apply_joined(w, n, R, first, fold, 1, 1)
                      : bwd_apply_joined(w, n, R, first, fold, 1, 0))
                return;
            V v[LN_RMAX] = {v_zero()}; /* all written: dx streams */
            bwd_apply_vec(w, w->dg, w->db, 0, 1, v_tailmask(h), R, first, fold, 0, v);
#pragma GCC unroll 4
            for (unsigned i = 0; i < R; i++)
                e_store_head(w->dx[i], h, v[i]);
        }
        if (ahead)
            bwd_apply_cols(w, h, n, R, first, fold, 1, 1);
        else
            bwd_apply_cols(w, h, n, R, first, fold, 1, 0);
    }
}

/*
 * Backward for R rows, interleaved; each row's sums are reduced in an order that depends
 * only on cols, never on R. Pass A reduces per row sum(g), sum(g (x - m)), sum(x - m);
 * pass B, while the rows are still in L1, writes dx and adds the rows' dy xhat and dy to
 * the block partials column by column in row order (so they do not depend on R either).
 * Returns 0, having written nothing, when a row's constants overflowed (the caller
 * rescues the group). `full`: gamma, dx and both partials are present; rms and acc are
 * constants in every instantiation, so the loops carry no tests. `stream`: dx goes out
 * with non-temporal stores where the rows allow (a constant too).
 */
LN_INLINE int backward_group(const ln_body_bwd_args *a, const ln_plan *p, double inv_n, size_t r,
                             unsigned R, size_t ahead, float *dg, float *db, int first, int last,
                             int full, int rms, int acc, int stream, int join)
{
    ln_bwd_rows w;
    w.gamma = a->gamma;
    w.dg = dg;
    w.db = db;
    w.fdg = acc && last ? a->acc_dg : NULL;
    w.fdb = acc && last ? a->acc_db : NULL;
    w.hg = full || a->gamma;
    w.hdg = full || dg;
    w.hdb = full || db;
    w.hdx = full || a->dx;
    w.rms = rms;
    w.acc = acc;
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        w.x[i] = a->x + (r + i) * a->ldx;
        w.dy[i] = a->dy + (r + i) * a->lddy;
        w.dx[i] = w.hdx ? a->dx + (r + i) * a->lddx : NULL;
        w.mv[i] = v_set1(rms ? 0.0f : a->mean[r + i]); /* RMSNorm: mean may be NULL */
        w.sg[i][0] = w.sg[i][1] = w.sx[i][0] = w.sx[i][1] = v_zero();
        w.sd[i][0] = w.sd[i][1] = v_zero();
    }
    const size_t n = p->n;
    /* Element-wise, so any split into vectors gives the same bits: streaming only moves
       where the vectors start. A group that cannot stream has its dx prefetched instead. */
    w.lines = bwd_stream_lines(a, n);
    const unsigned h = stream ? bwd_stream_head(&w, R, n) : LN_W + 1;
    const int sdx = h <= LN_W;
    w.pfdx = w.hdx && LN_COLD(a) && !sdx;
    w.nta = LN_PF_NTA(a);
    w.ax = ahead * a->ldx;
    w.ady = ahead * a->lddy;
    /* Float ACCUMULATE's dx, which pass B reads, is left to pass A's prefetch: hinted
       rows ahead too, it crowded the miss queue that x's and dy's hints wait on (Zen 4,
       cold, 64 MiB, alternating builds: without it 1.10-1.23x at 128-768 columns on
       AVX-512 and AVX2, 1.00-1.06x elsewhere). bf16 rows on AVX2 keep it: 0.89-0.92x
       at 768 columns without. */
#ifdef LN_ELEM_F32
    const int hint_dx = !acc;
#else
    const int hint_dx = 1;
#endif
    w.adx = w.hdx && !sdx && hint_dx ? ahead * a->lddx : 0;
    const VM tm = p->tmask;
    if (w.hdx || !rms) {
        size_t c = 0;
#if defined LN_JOIN && defined LN_ELEM_F32
        if (stream && R == 1)
            c = bwd_reduce_aligned(&w, n);
#endif
        for (; c + 2 * LN_W <= n; c += 2 * LN_W) {
            if (w.pfdx)
#pragma GCC unroll 4
                for (unsigned i = 0; i < R; i++)
                    ln_prefetchw(w.dx[i], c, 2);
            bwd_reduce_vec(&w, c, 0, tm, 0, R);
            bwd_reduce_vec(&w, c + LN_W, 0, tm, 1, R);
        }
        if (c + LN_W <= n) {
            bwd_reduce_vec(&w, c, 0, tm, 0, R);
            c += LN_W;
        }
        if (c < n)
            bwd_reduce_vec(&w, c, 1, tm, 1, R);
    }
    /* Pass A's sums per row: sum(g), sum(x - m), sum(g (x - m)) (unused ones are 0). */
    V hv[3][LN_RMAX];
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        hv[0][i] = v_add(w.sg[i][0], w.sg[i][1]);
        hv[1][i] = v_add(w.sd[i][0], w.sd[i][1]);
        hv[2][i] = v_add(w.sx[i][0], w.sx[i][1]);
    }
    int rescue = 0;
#ifdef LN_TREE4_POS
    if (R == 4) {
        const unsigned bad = bwd_constants4(&w, rms ? NULL : a->mean + r, a->rstd + r, inv_n,
                                            lanes4_f4(hsum4(hv[0])),
                                            lanes4_f4(hsum4(hv[1])), lanes4_f4(hsum4(hv[2])));
        for (unsigned i = 0; bad && i < 4; i++)
            if (bad >> i & 1u)
                rescue |= bwd_row_finite(a, r + i, rms);
    } else
#endif
    {
        float sums[3][LN_RMAX];
        for (unsigned k = 0; k < 3; k++)
            hsum_rows(hv[k], R, sums[k]);
#pragma GCC unroll 4
        for (unsigned i = 0; i < R; i++)
            if (!bwd_constants(&w, i, rms ? 0.0f : a->mean[r + i], a->rstd[r + i], inv_n,
                               sums[0][i], sums[1][i], sums[2][i]))
                rescue |= bwd_row_finite(a, r + i, rms);
    }
    if (rescue)
        return 0;
    /* The fold is a copy of the loops of its own, in the accumulating instantiations only:
       tested per vector, it cost those loops up to 16 % in calls that never fold. */
    if (acc && last && (w.fdg || w.fdb))
        bwd_apply_pass(&w, n, R, h, ahead, first, 1, join);
    else
        bwd_apply_pass(&w, n, R, h, ahead, first, 0, join);
    return 1;
}

/* Groups of R rows from r on; the group at r0 starts the partials from +0. In a cold call
   each group prefetches the group `ahead` rows on (ln_prefetch_rows) while that is in the
   call. A group whose constants overflowed (a row of finite values beyond the float
   path's range, e.g. |x - mean| near FLT_MAX) is redone row by row in double, which
   covers every float. The call's last group folds the partials into an accumulating
   call's dgamma/dbeta (args.acc_dg), in the loop or, rescued, after it. */
LN_INLINE size_t backward_groups(const ln_body_bwd_args *a, const ln_plan *p, double inv_n,
                                 size_t r, size_t r0, size_t r1, unsigned R, float *dg,
                                 float *db, int full, int rms, int acc, int stream, int hints,
                                 int join)
{
    const size_t ahead = hints && LN_COLD(a) ? ln_prefetch_rows(p->n, R, SIZE_MAX) : 0;
    for (; r + R <= r1; r += R)
        if (!backward_group(a, p, inv_n, r, R, r + ahead + R <= a->pf_rows ? ahead : 0, dg, db,
                            r == r0, r + R == r1, full, rms, acc, stream, join)) {
            for (unsigned i = 0; i < R; i++)
                ln_backward_row_double(a, r + i, dg, db, r + i == r0);
            if (acc && r + R == r1)
                ln_fold_partials(a, dg, db);
        }
    return r;
}

/* R shrinks with cols so that a group's rows stay near (L1, then L2) between the passes;
   two rows up to LN_BWD_R2_COLS share each vector's partials loads and stores. Above 4096
   columns the partials (8 bytes a column) are L2 traffic that one row alone pays in full:
   pairs ran 1.12-1.24x faster at 8192-32768 columns (Zen 4, AVX2 and AVX-512), while
   four-row groups at 768-2048 ran slower than pairs. The partial cases (a NULL operand:
   frozen gamma, no dx) take single rows: one copy of the loops instead of three, for
   calls that are rare in training. */
#define LN_BWD_R2_COLS 32768
/*
 * Where a cold call (hints) runs its rows one at a time: in these windows of cols its
 * groups and pairs cost more than they hide. R never changes a row's bits. Measured on
 * Zen 4, 64 MiB per operand flushed before each call, paired calls, time groups / single
 * rows:
 * - float ACCUMULATE (acc), 65-512 columns: AVX-512 1.26x at 96 columns, 1.68-1.72x at
 *   128, 1.56x at 192, 1.75-1.77x at 256, 1.28x at 384, 1.37-1.49x at 512; AVX2 1.12x at
 *   128, 1.59x at 256, 1.26x at 512. They held at 64 (0.94x) and from 640 (1.01x at 640,
 *   1.03x at 768, 0.88x at 2048). RMSNorm's accumulating rows take the same rule,
 *   unmeasured.
 * - bf16 rows whose dx streams (stream: AVX-512), 192-1024 columns: 1.20x at 192,
 *   1.17-1.20x at 256, 1.40x at 512, 1.13-1.21x at 768, 1.08-1.11x at 1024 (1280 and 2048
 *   0.94x and 1.08x, left to the groups). Outside, such a call is not yet at memory speed
 *   with single rows (16 Mi elements: 0.86x at 64 columns, 0.99x at 1601 against the
 *   prefetched stores, where groups ran 0.99x and 1.01x; 0.93-0.97x at 128, 0.98x at 160,
 *   0.89x at 1601, 0.83x at 4096, 0.81x at 16384). Groups whose rows are not at one offset
 *   in a line store dx normally, prefetched.
 * Float rows whose dx streams take bwd_rows_stream's rule instead.
 */
#define LN_BWD_ACC_R1_MIN 65
#define LN_BWD_ACC_R1_MAX 512
#define LN_BWD_BF16_R1_MIN 192
#define LN_BWD_BF16_R1_MAX 1024
LN_INLINE int bwd_cold_single(size_t n, int acc, int stream)
{
    if (acc) /* dx is read back: it never streams */
        return n >= LN_BWD_ACC_R1_MIN && n <= LN_BWD_ACC_R1_MAX;
#if !defined LN_ELEM_F32 && defined LN_BWD_STREAM
    if (stream)
        return n >= LN_BWD_BF16_R1_MIN && n <= LN_BWD_BF16_R1_MAX;
#endif
    (void)stream;
    return 0;
}

LN_INLINE void backward_rows(const ln_body_bwd_args *a, const ln_plan *p, size_t r0, size_t r1,
                             float *dg, float *db, int full, int rms, int acc, int hints,
                             int join, int stream)
{
    const double inv_n = 1.0 / (double)p->n;
    size_t r = r0;
    if (hints && bwd_cold_single(p->n, acc, stream)) {
        backward_groups(a, p, inv_n, r, r0, r1, 1, dg, db, full, rms, acc, stream, hints, join);
        return;
    }
    if (full && p->n <= LN_SMALL_COLS)
        r = backward_groups(a, p, inv_n, r, r0, r1, LN_RBWD, dg, db, full, rms, acc, stream, hints, join);
    /* Pairs, and after the four-row groups the last rows' pair (R never changes a row's
       bits): alone, each row waited on its own reduction chains. */
    if (full && p->n <= LN_BWD_R2_COLS)
        r = backward_groups(a, p, inv_n, r, r0, r1, 2, dg, db, full, rms, acc, stream, hints, join);
    backward_groups(a, p, inv_n, r, r0, r1, 1, dg, db, full, rms, acc, stream, hints, join);
}

/* One function per instantiation: each gets its own register allocation (inlined into
   one, the pass-B loops spilled their pointers). The cold training cases whose dx does not
   stream (float ACCUMULATE, bf16 rows on AVX2 and Arm) get copies with the hints: in the warm copies the
   hints' loops cost 1-4 % at 64-512 columns even untaken. Rows whose dx is off its
   alignment get copies with joined dx stores (bwd_apply_joined): compiled into the
   aligned copies, even untaken, it cost 768 columns 1-4 % (hot, AVX-512). */
#define LN_BWD_ROWS_FN(name, full, rms, acc, hints, join, stream)                             \
    static __attribute__((noinline)) void name(const ln_body_bwd_args *a, const ln_plan *p,   \
                                               size_t r0, size_t r1, float *dg, float *db)    \
    {                                                                                         \
        backward_rows(a, p, r0, r1, dg, db, full, rms, acc, hints, join, stream);             \
    }
LN_BWD_ROWS_FN(bwd_rows_full, 1, 0, 0, 0, 0, 0)
LN_BWD_ROWS_FN(bwd_rows_full_rms, 1, 1, 0, 0, 0, 0)
LN_BWD_ROWS_FN(bwd_rows_full_acc, 1, 0, 1, 0, 0, 0)
LN_BWD_ROWS_FN(bwd_rows_full_rms_acc, 1, 1, 1, 0, 0, 0)
LN_BWD_ROWS_FN(bwd_rows_any, 0, (a->flags & LN_FLAG_RMS_NORM) != 0,
               (a->dx && (a->flags & LN_FLAG_ACCUMULATE)), 0, 0, 0)
#ifdef LN_ELEM_F32
LN_BWD_ROWS_FN(bwd_rows_cold_acc, 1, 0, 1, 1, 0, 0)
LN_BWD_ROWS_FN(bwd_rows_cold_rms_acc, 1, 1, 1, 1, 0, 0)
#elif !defined LN_BWD_STREAM
LN_BWD_ROWS_FN(bwd_rows_cold, 1, 0, 0, 1, 0, 0) /* bf16 rows have no flags */
#else
LN_BWD_ROWS_FN(bwd_rows_cold_stream, 1, 0, 0, 1, 0, 1) /* bf16 rows have no flags */
#endif
#if defined LN_JOIN && defined LN_ELEM_F32
LN_BWD_ROWS_FN(bwd_rows_full_join, 1, 0, 0, 0, 1, 0)
LN_BWD_ROWS_FN(bwd_rows_full_rms_join, 1, 1, 0, 0, 1, 0)
LN_BWD_ROWS_FN(bwd_rows_full_acc_join, 1, 0, 1, 0, 1, 0)
LN_BWD_ROWS_FN(bwd_rows_full_rms_acc_join, 1, 1, 1, 0, 1, 0)
#endif

/* Whether some row of dx is off its alignment (dx itself, or a stride off the vector) in
   rows long enough for bwd_apply_joined: such calls take the _join copies. */
LN_INLINE int bwd_join(const ln_body_bwd_args *a)
{
#if defined LN_JOIN && defined LN_ELEM_F32
    const uintptr_t mis = ((uintptr_t)a->dx | a->lddx * sizeof(float)) % LN_VALIGN;
    return mis != 0 && mis % sizeof(float) == 0 && a->cols >= LN_JOIN_MIN_VECS * LN_W;
#else
    (void)a;
    return 0;
#endif
}

/* The warm training loops of one kind (suffix: none, or _join). Direct calls, not a table
   of them: called directly, each copy got its constants propagated (a .constprop clone);
   through a table 768 columns ran 1.5-2.7 % slower (hot, AVX-512). */
#define LN_BWD_WARM(sfx)                                                                      \
    do {                                                                                      \
        if (!rms && !acc)                                                                     \
            bwd_rows_full##sfx(a, &p, r0, r1, dg, db);                                        \
        else if (!acc)                                                                        \
            bwd_rows_full_rms##sfx(a, &p, r0, r1, dg, db);                                    \
        else if (!rms)                                                                        \
            bwd_rows_full_acc##sfx(a, &p, r0, r1, dg, db);                                    \
        else                                                                                  \
            bwd_rows_full_rms_acc##sfx(a, &p, r0, r1, dg, db);                                \
    } while (0)

/* Streamed dx (args.nt: the call's operands exceed the cache), any flags but ACCUMULATE
   (which reads dx back). Such calls run at memory speed, where interleaving rows gains
   nothing, so single rows serve most cols; R never changes a row's bits. Rows up to
   LN_BWD_STREAM_R4_COLS, which one at a time wait on their reductions more than on
   memory, keep the groups of four: paired, 8 and 32 MiB per operand (Zen 4, AVX-512),
   0.74x / 0.68x the time at 64 columns, 0.77x / 0.91x at 128, but 1.07-1.12x at 256.
   A vocabulary may bound them lower (AVX-512: its vocabulary says why).
   The training cases (every operand present; LayerNorm or RMSNorm) get copies with those
   a constant, like the warm loops: with the tests on gamma, dx, the partials and the flag
   left in every vector, the plain backward ran 1.03-1.37x slower and RMSNorm's 1.10-1.43x
   (Zen 3, AVX2, 64 MiB per operand flushed before each call, paired builds, 64-16384
   columns), RMSNorm 0.87x the plain one at 256-1600 columns. */
#ifndef LN_BWD_STREAM_R4_COLS
#define LN_BWD_STREAM_R4_COLS 128
#endif
LN_INLINE void bwd_rows_stream(const ln_body_bwd_args *a, const ln_plan *p, size_t r0,
                                size_t r1, float *dg, float *db, int full, int rms)
{
    const double inv_n = 1.0 / (double)p->n;
    size_t r = r0;
    if (p->n <= LN_BWD_STREAM_R4_COLS)
        r = backward_groups(a, p, inv_n, r, r0, r1, LN_RBWD, dg, db, full, rms, 0, 1, 1, 0);
    backward_groups(a, p, inv_n, r, r0, r1, 1, dg, db, full, rms, 0, 1, 1, 0);
}
#define LN_BWD_STREAM_FN(name, full, rms)                                                     \
    static __attribute__((noinline)) void name(const ln_body_bwd_args *a, const ln_plan *p,   \
                                               size_t r0, size_t r1, float *dg, float *db)    \
    {                                                                                         \
        bwd_rows_stream(a, p, r0, r1, dg, db, full, rms);                                     \
    }
#ifdef LN_ELEM_F32
LN_BWD_STREAM_FN(bwd_rows_stream_full, 1, 0)
LN_BWD_STREAM_FN(bwd_rows_stream_full_rms, 1, 1)
#endif
LN_BWD_STREAM_FN(bwd_rows_stream_any, 0, (a->flags & LN_FLAG_RMS_NORM) != 0)

static void backward_kernel(const ln_body_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    if (r0 >= r1) { /* no rows: the partials are empty sums */
        for (size_t j = 0; j < a->cols; j++) {
            if (dg)
                dg[j] = 0.0f;
            if (db)
                db[j] = 0.0f;
        }
        ln_fold_partials(a, dg, db);
        return;
    }
    _Static_assert(LN_W <= LN_TINY_COLS, "rows shorter than a vector fit the tiny path");
    if (a->cols < LN_TINY_COLS) { /* short rows: cancellation a float path cannot resolve */
        ln_backward_tiny(a, r0, r1, dg, db);
        ln_fold_partials(a, dg, db);
        return;
    }
    ln_plan p;
    plan_shape(&p, a->cols, 1);
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0;
    const int acc = a->dx && (a->flags & LN_FLAG_ACCUMULATE);
    const int full = a->gamma && a->dx && dg && db;
    /* The training cases get loops with every operand and flag a constant. */
    if (bwd_nt(a) && a->dx && !acc) {
#if !defined LN_ELEM_F32 && defined LN_BWD_STREAM
        if (full)
            bwd_rows_cold_stream(a, &p, r0, r1, dg, db);
        else
#elif defined LN_ELEM_F32
        if (full && rms)
            bwd_rows_stream_full_rms(a, &p, r0, r1, dg, db);
        else if (full)
            bwd_rows_stream_full(a, &p, r0, r1, dg, db);
        else
#endif
            bwd_rows_stream_any(a, &p, r0, r1, dg, db);
        /* no fence: the runner's ln_stream_fence orders the streamed dx */
#ifdef LN_ELEM_F32
    } else if (full && LN_COLD(a)) { /* only ACCUMULATE is cold here (else dx streams) */
        if (rms)
            bwd_rows_cold_rms_acc(a, &p, r0, r1, dg, db);
        else
            bwd_rows_cold_acc(a, &p, r0, r1, dg, db);
#elif !defined LN_BWD_STREAM
    } else if (full && LN_COLD(a)) { /* bf16 rows where dx does not stream (AVX2, Arm) */
        bwd_rows_cold(a, &p, r0, r1, dg, db);
#endif
    } else if (full && bwd_join(a)) {
#if defined LN_JOIN && defined LN_ELEM_F32
        LN_BWD_WARM(_join);
#endif
    } else if (full) {
        LN_BWD_WARM();
    } else {
        bwd_rows_any(a, &p, r0, r1, dg, db);
    }
    if (!acc) /* the loops fold only where dx accumulates too */
        ln_fold_partials(a, dg, db);
}

#endif /* LN_KERNELS_BACKWARD_H */
