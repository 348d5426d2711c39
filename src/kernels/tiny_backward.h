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

/*
 * In double as the oracle does: with cols == 2, g - mean(g) is exactly proportional to
 * xhat, so dx is nothing but cancellation (of order eps/var) and float rounding of the
 * O(1) terms would be all that is left. Such rows are too short for vectors to pay.
 * Adds this row's dy*xhat and dy to dg/db (either may be NULL) from +0 when `first`, so
 * an all-zero sum stays +0; dy[i] is read before dx[i] is written (dx may be dy).
 */
static inline void ln_backward_row_double(const ln_body_bwd_args *a, size_t r, float *dg,
                                          float *db, int first)
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
        if (dg)
            dg[i] = (float)((first ? 0.0 : (double)dg[i]) + dv * xh);
        if (db)
            db[i] = (float)((first ? 0.0 : (double)db[i]) + dv);
    }
    if (!a->dx)
        return;
    LN_ELEM *dx = a->dx + r * a->lddx;
    const double mg = rms ? 0.0 : sg / (double)n, mx = sx / (double)n;
    for (size_t i = 0; i < n; i++) {
        const double xh = ((double)e_get(x + i) - mean) * rstd;
        const double g = (double)e_get(dy + i) * (a->gamma ? (double)a->gamma[i] : 1.0);
        const double v = rstd * (g - mg - xh * mx);
        e_put(dx + i, (float)(acc ? (double)e_get(dx + i) + v : v));
    }
}

/* Rows [r0, r1) of one block; the partials start from +0 at r0. */
static inline void ln_backward_tiny(const ln_body_bwd_args *a, size_t r0, size_t r1, float *dg,
                                    float *db)
{
    for (size_t r = r0; r < r1; r++)
        ln_backward_row_double(a, r, dg, db, r == r0);
}

#endif /* LN_KERNELS_TINY_BACKWARD_H */
