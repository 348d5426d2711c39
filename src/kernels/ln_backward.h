/* ln_backward.h - the LayerNorm / RMSNorm backward body, over the vocabulary of ln_common.h. */
#ifndef LN_KERNELS_BACKWARD_H
#define LN_KERNELS_BACKWARD_H

#include "kernels/ln_common.h"
#include "kernels/tiny_backward.h"

/* Per-row state of a backward group: pointers, saved statistics, two pairs of sums. */
typedef struct ln_bwd_rows {
    const LN_ELEM *x[LN_RMAX], *dy[LN_RMAX];
    LN_ELEM *dx[LN_RMAX];
    const float *gamma;
    float *dg, *db;
    int hg, hdg, hdb, hdx; /* which operands exist: constants in the `full` instantiation */
    int rms, acc;          /* LN_FLAG_RMS_NORM, LN_FLAG_ACCUMULATE: 0 when `full` */
    V mv[LN_RMAX], rs[LN_RMAX], sg[LN_RMAX][2], sx[LN_RMAX][2];
} ln_bwd_rows;

/* Pass A on the vector at column c for R rows; u picks the sums (alternating vectors
   shortens each sum's dependency chain). `first`: partials start from +0. */
LN_INLINE void bwd_reduce_vec(ln_bwd_rows *w, size_t c, int tail, VM tm, unsigned u,
                              unsigned R, int first)
{
    V gv = v_zero(), vdg = v_zero(), vdb = v_zero();
    if (w->hg)
        gv = load_t(w->gamma + c, tail, tm);
    if (w->hdg && !first)
        vdg = load_t(w->dg + c, tail, tm);
    if (w->hdb && !first)
        vdb = load_t(w->db + c, tail, tm);
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        const V dv = eload_t(w->dy[i] + c, tail, tm);
        const V xh = v_mul(centered_t(w->x[i] + c, w->mv[i], tail, tm), w->rs[i]);
        if (w->hdx) {
            const V g = w->hg ? v_mul(dv, gv) : dv;
            w->sg[i][u] = v_add(w->sg[i][u], g);
            w->sx[i][u] = v_fma(g, xh, w->sx[i][u]);
        }
        vdg = v_fma(dv, xh, vdg);
        vdb = v_add(vdb, dv);
    }
    if (w->hdg)
        store_t(w->dg + c, vdg, tail, tm);
    if (w->hdb)
        store_t(w->db + c, vdb, tail, tm);
}

/* Pass B: dx = rstd * (g - mean(g) - xhat * mean(g*xhat)), or dx += that; RMSNorm has
   mean 0 and no mean(g) term (mg = 0 then). */
LN_INLINE V bwd_dx_vec(const ln_bwd_rows *w, unsigned i, size_t c, int tail, VM tm, V mg,
                       V mx)
{
    const V xh = v_mul(centered_t(w->x[i] + c, w->mv[i], tail, tm), w->rs[i]);
    const V dv = eload_t(w->dy[i] + c, tail, tm);
    const V g = w->hg ? v_mul(dv, load_t(w->gamma + c, tail, tm)) : dv;
    const V v = v_mul(v_fnma(xh, mx, v_sub(g, mg)), w->rs[i]);
    return w->acc ? v_add(eload_t(w->dx[i] + c, tail, tm), v) : v;
}

/*
 * Backward for R rows, interleaved; each row's sums are reduced in an order that depends
 * only on cols, never on R. Pass A reduces sum(g) and sum(g*xhat) per row and adds the
 * rows' dy*xhat and dy to the block partials in row order (so the partials do not depend
 * on R either); pass B writes dx while the rows are still in L1. `full`: gamma, dx and
 * both partials are present and no flag is set (the training case), so the loops carry
 * no tests.
 */
LN_INLINE void backward_group(const ln_body_bwd_args *a, const ln_plan *p, size_t r, unsigned R,
                              float *dg, float *db, int first, int full)
{
    ln_bwd_rows w;
    w.gamma = a->gamma;
    w.dg = dg;
    w.db = db;
    w.hg = full || a->gamma;
    w.hdg = full || dg;
    w.hdb = full || db;
    w.hdx = full || a->dx;
    w.rms = !full && (a->flags & LN_FLAG_RMS_NORM);
    w.acc = !full && (a->flags & LN_FLAG_ACCUMULATE);
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        w.x[i] = a->x + (r + i) * a->ldx;
        w.dy[i] = a->dy + (r + i) * a->lddy;
        w.dx[i] = a->dx ? a->dx + (r + i) * a->lddx : NULL;
        w.mv[i] = v_set1(w.rms ? 0.0f : a->mean[r + i]); /* RMSNorm: mean may be NULL */
        w.rs[i] = v_set1(a->rstd[r + i]);
        w.sg[i][0] = w.sg[i][1] = w.sx[i][0] = w.sx[i][1] = v_zero();
    }
    const size_t n = p->n;
    const VM tm = p->tmask;
    size_t c = 0;
    for (; c + 2 * LN_W <= n; c += 2 * LN_W) {
        bwd_reduce_vec(&w, c, 0, tm, 0, R, first);
        bwd_reduce_vec(&w, c + LN_W, 0, tm, 1, R, first);
    }
    if (c + LN_W <= n) {
        bwd_reduce_vec(&w, c, 0, tm, 0, R, first);
        c += LN_W;
    }
    if (c < n)
        bwd_reduce_vec(&w, c, 1, tm, 1, R, first);
    if (!w.hdx)
        return;
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; i++) {
        const V mg = v_set1(w.rms ? 0.0f : hsum(v_add(w.sg[i][0], w.sg[i][1])) * p->inv_n);
        const V mx = v_set1(hsum(v_add(w.sx[i][0], w.sx[i][1])) * p->inv_n);
        size_t k = 0;
        for (; k + 2 * LN_W <= n; k += 2 * LN_W)
            e_store2(w.dx[i] + k, bwd_dx_vec(&w, i, k, 0, tm, mg, mx),
                     bwd_dx_vec(&w, i, k + LN_W, 0, tm, mg, mx));
        for (; k + LN_W <= n; k += LN_W)
            e_store(w.dx[i] + k, bwd_dx_vec(&w, i, k, 0, tm, mg, mx));
        if (k < n)
            e_storem(w.dx[i] + k, tm, bwd_dx_vec(&w, i, k, 1, tm, mg, mx));
    }
}

/* Groups of R rows from r on; the group at r0 starts the partials from +0. */
LN_INLINE size_t backward_groups(const ln_body_bwd_args *a, const ln_plan *p, size_t r, size_t r0,
                                 size_t r1, unsigned R, float *dg, float *db, int full)
{
    if (r == r0 && r + R <= r1) {
        backward_group(a, p, r, R, dg, db, 1, full);
        r += R;
    }
    for (; r + R <= r1; r += R)
        backward_group(a, p, r, R, dg, db, 0, full);
    return r;
}

/* R shrinks with cols so that a group's rows stay in L1 between the passes. */
LN_INLINE void backward_rows(const ln_body_bwd_args *a, const ln_plan *p, size_t r0, size_t r1,
                             float *dg, float *db, int full)
{
    size_t r = r0;
    if (p->n <= LN_SMALL_COLS)
        r = backward_groups(a, p, r, r0, r1, LN_RBWD, dg, db, full);
    else if (p->n <= 1024)
        r = backward_groups(a, p, r, r0, r1, 2, dg, db, full);
    backward_groups(a, p, r, r0, r1, 1, dg, db, full);
}

static void backward_kernel(const ln_body_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
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
    if (a->cols < LN_W) {
        ln_backward_tiny(a, r0, r1, dg, db);
        return;
    }
    if (a->gamma && a->dx && dg && db && !a->flags)
        backward_rows(a, &p, r0, r1, dg, db, 1);
    else
        backward_rows(a, &p, r0, r1, dg, db, 0);
}

#endif /* LN_KERNELS_BACKWARD_H */
