/* scalar_bf16.c - the bf16 oracle: the double reference on widened inputs, rounded twice. */
#include <math.h>

#include "bf16.h"
#include "ln_internal.h"

/* The bf16 contract is "round the float LayerNorm of the widened inputs", so the oracle
   produces exactly the float oracle's value, (float) of the double result, and rounds
   that to bf16: every SIMD kernel is then compared with one well-defined number. */
static double wide(const uint16_t *p, size_t i) { return (double)ln_bf16_to_f32(p[i]); }

void ln_bf16_forward_scalar(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    const size_t n = a->cols;
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        double m = 0.0, s = 0.0; /* Welford in double, as the float oracle */
        for (size_t i = 0; i < n; i++) {
            const double d = wide(x, i) - m;
            m += d / (double)(i + 1);
            s += d * (wide(x, i) - m);
        }
        const double rstd = 1.0 / sqrt(s / (double)n + (double)a->eps);
        for (size_t i = 0; i < n; i++) {
            const double g = a->gamma ? (double)a->gamma[i] : 1.0;
            const double b = a->beta ? (double)a->beta[i] : 0.0;
            y[i] = ln_f32_to_bf16((float)((wide(x, i) - m) * rstd * g + b));
        }
        if (a->mean)
            a->mean[r] = (float)m;
        if (a->rstd)
            a->rstd[r] = (float)rstd;
    }
}

/* Row r's mean as the float oracle takes it: the saved float mean corrected by the row
   itself (kernels/tiny_backward.h, ln_row_mean_double). */
static double row_mean(const ln_bf16_bwd_args *a, size_t r)
{
    const uint16_t *x = a->x + r * a->ldx;
    double s = 0.0;
    for (size_t i = 0; i < a->cols; i++)
        s += wide(x, i) - (double)a->mean[r];
    return isfinite(s) ? (double)a->mean[r] + s / (double)a->cols : (double)a->mean[r];
}

/* Per row: the parameter partials (dy is read before dx, which may be dy, is written),
   then dx. Row order within the block is the summation order, as in the float oracle. */
void ln_bf16_backward_scalar(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                             float *dbeta)
{
    const size_t n = a->cols;
    double bmean[LN_BWD_BLOCK]; /* the runner's calls with partials span one block */
    for (size_t b0 = r0; b0 < r1 && (dgamma || dbeta); b0 += LN_BWD_BLOCK) {
        const size_t b1 = r1 - b0 < LN_BWD_BLOCK ? r1 : b0 + LN_BWD_BLOCK;
        for (size_t r = b0; r < b1; r++)
            bmean[r - b0] = row_mean(a, r);
        for (size_t j = 0; j < n; j++) {
            double sg = 0.0, sb = 0.0; /* from +0: an all-zero sum stays +0 */
            for (size_t r = b0; r < b1; r++) {
                const double dy = wide(a->dy + r * a->lddy, j);
                sg += dy * ((wide(a->x + r * a->ldx, j) - bmean[r - b0]) * a->rstd[r]);
                sb += dy;
            }
            if (dgamma)
                dgamma[j] = (float)(b0 == r0 ? sg : (double)dgamma[j] + sg);
            if (dbeta)
                dbeta[j] = (float)(b0 == r0 ? sb : (double)dbeta[j] + sb);
        }
    }
    for (size_t r = r0; r < r1 && a->dx; r++) {
        const uint16_t *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
        uint16_t *dx = a->dx + r * a->lddx;
        const double mean = row_mean(a, r), rstd = a->rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double g = wide(dy, i) * (a->gamma ? (double)a->gamma[i] : 1.0);
            sum_g += g;
            sum_gx += g * ((wide(x, i) - mean) * rstd);
        }
        const double mg = sum_g / (double)n, mgx = sum_gx / (double)n;
        for (size_t i = 0; i < n; i++) {
            const double g = wide(dy, i) * (a->gamma ? (double)a->gamma[i] : 1.0);
            const double xhat = (wide(x, i) - mean) * rstd;
            dx[i] = ln_f32_to_bf16((float)(rstd * (g - mg - xhat * mgx)));
        }
    }
}
