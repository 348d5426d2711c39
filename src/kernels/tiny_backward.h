/* tiny_backward.h - one row's backward in double: rows shorter than a vector, and the oracle's dx. */
#ifndef LN_KERNELS_TINY_BACKWARD_H
#define LN_KERNELS_TINY_BACKWARD_H

#include <math.h>

#include "kernels/elem.h"

/* The row's own mean for backward: the saved float mean m plus delta = sum(x - m) / n in
   double, which recovers the rounding of m (|mean| 2^-24, most of x - mean on a row whose
   mean dwarfs its spread). RMSNorm: 0. */
static inline double ln_row_mean_double(const LN_ELEM *x, size_t n, float m, int rms)
{
    if (rms)
        return 0.0;
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)e_get(x + i) - (double)m;
    /* A NaN or Inf in x spoils its own column of dgamma only, as without the correction. */
    return isfinite(s) ? (double)m + s / (double)n : (double)m;
}

/* dx of a LayerNorm row of two: x - mean = +-d, g - mean(g) = +-h with d = (x0 - x1)/2,
   h = (g0 - g1)/2, so dx0 = -dx1 = rstd h (1 - t^2), t = d rstd. With t^2 near 1 (eps far
   below the variance) that is all cancellation; t = th + tl exactly (fma), 1 - th exact
   for th in [1/2, 2], so (1 - th)(1 + th) - 2 th tl keeps the result's own precision. */
static inline double ln_dx_pair(double x0, double x1, double g0, double g1, double rstd)
{
    const double d = (x0 - x1) * 0.5, h = (g0 - g1) * 0.5;
    const double th = d * rstd, tl = fma(d, rstd, -th);
    return rstd * h * ((1.0 - th) * (1.0 + th) - 2.0 * th * tl);
}

/*
 * In double as the oracle does: with cols == 2, g - mean(g) is exactly proportional to
 * xhat, so dx is nothing but cancellation (of order eps/var) and float rounding of the
 * O(1) terms would be all that is left (ln_dx_pair). Such rows are too short for vectors
 * to pay. Adds this row's dy*xhat and dy to the double sums pg/pb when given, else to the
 * float dg/db (either may be NULL) from +0 when `first`, so an all-zero sum stays +0;
 * dy[i] is read before dx[i] is written (dx may be dy).
 */
static inline void ln_backward_row_sums(const ln_body_bwd_args *a, size_t r, float *dg,
                                        float *db, int first, double *pg, double *pb)
{
    const size_t n = a->cols;
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0;
    const int acc = (a->flags & LN_FLAG_ACCUMULATE) != 0;
    const LN_ELEM *x = a->x + r * a->ldx, *dy = a->dy + r * a->lddy;
    const double mean = ln_row_mean_double(x, n, rms ? 0.0f : a->mean[r], rms);
    const double rstd = a->rstd[r];
    double sg = 0.0, sx = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double xh = ((double)e_get(x + i) - mean) * rstd;
        const double dv = e_get(dy + i);
        const double g = dv * (a->gamma ? (double)a->gamma[i] : 1.0);
        sg += g;
        sx += g * xh;
        if (pg)
            pg[i] += dv * xh;
        else if (dg)
            dg[i] = (float)((first ? 0.0 : (double)dg[i]) + dv * xh);
        if (pb)
            pb[i] += dv;
        else if (db)
            db[i] = (float)((first ? 0.0 : (double)db[i]) + dv);
    }
    if (!a->dx)
        return;
    LN_ELEM *dx = a->dx + r * a->lddx;
    const double mg = rms ? 0.0 : sg / (double)n, mx = sx / (double)n;
    double pair = 0.0;
    if (n == 2 && !rms)
        pair = ln_dx_pair(e_get(x), e_get(x + 1),
                          (double)e_get(dy) * (a->gamma ? (double)a->gamma[0] : 1.0),
                          (double)e_get(dy + 1) * (a->gamma ? (double)a->gamma[1] : 1.0), rstd);
    for (size_t i = 0; i < n; i++) {
        const double xh = ((double)e_get(x + i) - mean) * rstd;
        const double g = (double)e_get(dy + i) * (a->gamma ? (double)a->gamma[i] : 1.0);
        double v = rstd * (g - mg - xh * mx);
        if (n == 2 && !rms && isfinite(pair))
            v = i ? -pair : pair;
        e_put(dx + i, (float)(acc ? (double)e_get(dx + i) + v : v));
    }
}

/* One row with float partials: the oracle's dx and the SIMD kernels' rescue. */
static inline void ln_backward_row_double(const ln_body_bwd_args *a, size_t r, float *dg,
                                          float *db, int first)
{
    ln_backward_row_sums(a, r, dg, db, first, NULL, NULL);
}

/* args.acc_dg/acc_db += the block partials dg/db, for the paths that return partials:
   part + acc, the order of the loops that fold them in place (ln_backward.h). */
static inline void ln_fold_partials(const ln_body_bwd_args *a, const float *dg, const float *db)
{
    for (size_t j = 0; j < a->cols; j++) {
        if (a->acc_dg)
            a->acc_dg[j] = dg[j] + a->acc_dg[j];
        if (a->acc_db)
            a->acc_db[j] = db[j] + a->acc_db[j];
    }
}

/* Rows [r0, r1) of one block, fewer than LN_TINY_COLS columns: the partials summed over
   the rows in double and rounded once, as the oracle does (rounding after every row
   would leave a block's cancellation at float precision). */
#define LN_TINY_COLS 16
static inline void ln_backward_tiny(const ln_body_bwd_args *a, size_t r0, size_t r1, float *dg,
                                    float *db)
{
    double pg[LN_TINY_COLS] = {0}, pb[LN_TINY_COLS] = {0};
    for (size_t r = r0; r < r1; r++)
        ln_backward_row_sums(a, r, NULL, NULL, 0, pg, pb);
    for (size_t j = 0; j < a->cols; j++) {
        if (dg)
            dg[j] = (float)pg[j];
        if (db)
            db[j] = (float)pb[j];
    }
}

#endif /* LN_KERNELS_TINY_BACKWARD_H */
