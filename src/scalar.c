/* scalar.c - the reference kernel: computes in double; the oracle for every SIMD path. */
#include <math.h>

#include "ln_internal.h"

/* Welford in double: one pass, and with a 53-bit significand the rounding of a float
   row's statistics is far below what any float kernel can resolve. */
static void row_stats(const float *x, size_t n, double *mean, double *m2)
{
    double m = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)x[i] - m;
        m += d / (double)(i + 1);
        s += d * ((double)x[i] - m);
    }
    *mean = m;
    *m2 = s;
}

static void forward_scalar(const ln_fwd_args *a, size_t r0, size_t r1)
{
    const size_t n = a->cols;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->ldx;
        float *y = a->y + r * a->ldy;
        double mean, m2;
        row_stats(x, n, &mean, &m2);
        const double rstd = 1.0 / sqrt(m2 / (double)n + (double)a->eps);
        for (size_t i = 0; i < n; i++) {
            const double g = a->gamma ? (double)a->gamma[i] : 1.0;
            const double b = a->beta ? (double)a->beta[i] : 0.0;
            /* Centered: a constant row gives exactly 0 * g + b == beta. */
            y[i] = (float)(((double)x[i] - mean) * rstd * g + b);
        }
        if (a->mean)
            a->mean[r] = (float)mean;
        if (a->rstd)
            a->rstd[r] = (float)rstd;
    }
}

/* dgamma/dbeta partials column by column, in double over the block's rows. This runs
   before dx is written, because dx may be dy. */
static void param_grads(const ln_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                        float *dbeta)
{
    for (size_t j = 0; j < a->cols; j++) {
        double sg = 0.0, sb = 0.0; /* from +0: an all-zero sum stays +0 */
        for (size_t r = r0; r < r1; r++) {
            const double dy = a->dy[r * a->lddy + j];
            const double xhat = ((double)a->x[r * a->ldx + j] - a->mean[r]) * a->rstd[r];
            sg += dy * xhat;
            sb += dy;
        }
        if (dgamma)
            dgamma[j] = (float)sg;
        if (dbeta)
            dbeta[j] = (float)sb;
    }
}

static void backward_scalar(const ln_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                            float *dbeta)
{
    const size_t n = a->cols;
    if (dgamma || dbeta)
        param_grads(a, r0, r1, dgamma, dbeta);
    if (!a->dx)
        return;
    for (size_t r = r0; r < r1; r++) {
        const float *dy = a->dy + r * a->lddy;
        const float *x = a->x + r * a->ldx;
        float *dx = a->dx + r * a->lddx;
        const double mean = a->mean[r], rstd = a->rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double g = (double)dy[i] * (a->gamma ? (double)a->gamma[i] : 1.0);
            sum_g += g;
            sum_gx += g * (((double)x[i] - mean) * rstd);
        }
        const double mg = sum_g / (double)n, mgx = sum_gx / (double)n;
        for (size_t i = 0; i < n; i++) {
            const double g = (double)dy[i] * (a->gamma ? (double)a->gamma[i] : 1.0);
            const double xhat = ((double)x[i] - mean) * rstd;
            dx[i] = (float)(rstd * (g - mg - xhat * mgx));
        }
    }
}

const ln_kernels ln_kernels_scalar = {
    .isa = LN_ISA_SCALAR,
    .name = "scalar",
    .forward = forward_scalar,
    .backward = backward_scalar,
};
