/* scalar.c - the reference kernel: computes in double; the oracle for every SIMD path. */
#include <math.h>

#include "kernels/tiny_backward.h"
#include "ln_internal.h"

/* The value normalized at column i: x, or s = x + residual rounded to float (the sum the
   fused entry point stores), read back from sum once stored since sum may be residual. */
static float source(const float *x, const float *res, const float *sum, size_t i)
{
    if (!res)
        return x[i];
    return sum ? sum[i] : x[i] + res[i];
}

/* One pass. Centered: Welford in double on the values shifted by the row's first one
   (exact in double), whose 53-bit significand puts the statistics' rounding far below
   what a float kernel can resolve -- also for |mean|/sigma ~ 1e8, where an unshifted
   running mean's roundings (2^-53 |mean| each) reached sigma 2^-24. RMS: the mean
   square, mean 0. With a residual the pass also stores s for the apply pass. */
static void row_stats(const ln_fwd_args *a, size_t r, double *mean, double *shift,
                      double *mshift, double *var)
{
    const float *x = a->x + r * a->ldx;
    const float *res = a->residual ? a->residual + r * a->ldx : NULL;
    float *sum = a->sum && res ? a->sum + r * a->ldx : NULL;
    const double sh = (a->flags & LN_FLAG_RMS_NORM) ? 0.0 : (double)source(x, res, NULL, 0);
    double m = 0.0, s = 0.0;
    for (size_t i = 0; i < a->cols; i++) {
        const float v = source(x, res, NULL, i);
        if (sum)
            sum[i] = v;
        if (a->flags & LN_FLAG_RMS_NORM) {
            s += (double)v * v;
        } else {
            const double d = ((double)v - sh) - m;
            m += d / (double)(i + 1);
            s += d * (((double)v - sh) - m);
        }
    }
    *mean = sh + m;
    *shift = sh;
    *mshift = m;
    *var = s / (double)a->cols;
}

void ln_forward_scalar(const ln_fwd_args *a, size_t r0, size_t r1)
{
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->ldx;
        const float *res = a->residual ? a->residual + r * a->ldx : NULL;
        const float *sum = a->sum && res ? a->sum + r * a->ldx : NULL;
        float *y = a->y + r * a->ldy;
        double mean, sh, ms, var;
        row_stats(a, r, &mean, &sh, &ms, &var);
        /* var is Inf only where a value is (RMSNorm: Inf^2): NaN, as kernels/plan.h's
           rescue gives, so that row's outputs are NaN. */
        const double rstd = isinf(var) ? NAN : 1.0 / sqrt(var + (double)a->eps);
        for (size_t i = 0; i < a->cols; i++) {
            const double g = a->gamma ? (double)a->gamma[i] : 1.0;
            const double b = a->beta ? (double)a->beta[i] : 0.0;
            /* Centered as (x - shift) - m: both exact-ish in double whatever |mean|; a
               constant row gives exactly 0 * g + b == beta. */
            y[i] = (float)((((double)source(x, res, sum, i) - sh) - ms) * rstd * g + b);
        }
        if (a->mean)
            a->mean[r] = (float)mean;
        if (a->rstd)
            a->rstd[r] = (float)rstd;
    }
}

/* Row r's mean for backward (kernels/tiny_backward.h): the saved float mean corrected by
   the row itself, or 0 for RMSNorm (whose mean pointer may be NULL). */
static double row_mean(const ln_bwd_args *a, size_t r)
{
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0;
    return ln_row_mean_double(a->x + r * a->ldx, a->cols, rms ? 0.0f : a->mean[r], rms);
}

/* dx per row: kernels/tiny_backward.h, the code every kernel's tiny rows run. */

/* dgamma/dbeta partials column by column, in double over the rows [r0, r1) of at most
   one block; `first`: from +0 (an all-zero sum stays +0), else added to the partials.
   This runs before dx is written, because dx may be dy. */
static void param_grads_block(const ln_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                              float *dbeta, int first)
{
    double mean[LN_BWD_BLOCK];
    for (size_t r = r0; r < r1; r++)
        mean[r - r0] = row_mean(a, r);
    for (size_t j = 0; j < a->cols; j++) {
        double sg = 0.0, sb = 0.0;
        for (size_t r = r0; r < r1; r++) {
            const double dy = a->dy[r * a->lddy + j];
            const double xhat = ((double)a->x[r * a->ldx + j] - mean[r - r0]) * a->rstd[r];
            sg += dy * xhat;
            sb += dy;
        }
        if (dgamma)
            dgamma[j] = (float)(first ? sg : (double)dgamma[j] + sg);
        if (dbeta)
            dbeta[j] = (float)(first ? sb : (double)dbeta[j] + sb);
    }
}

/* The runner asks for partials over one block at a time; a longer call is summed per
   block of rows all the same. */
static void param_grads(const ln_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                        float *dbeta)
{
    for (size_t r = r0; r < r1; r += LN_BWD_BLOCK)
        param_grads_block(a, r, r1 - r < LN_BWD_BLOCK ? r1 : r + LN_BWD_BLOCK, dgamma, dbeta,
                          r == r0);
}

void ln_backward_scalar(const ln_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                        float *dbeta)
{
    if (dgamma || dbeta) {
        param_grads(a, r0, r1, dgamma, dbeta);
        ln_fold_partials(a, dgamma, dbeta);
    }
    if (!a->dx)
        return;
    for (size_t r = r0; r < r1; r++)
        ln_backward_row_double(a, r, NULL, NULL, 0);
}
