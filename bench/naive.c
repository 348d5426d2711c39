/* naive.c - the competitor every user can write: LayerNorm straight from the formula, three passes. */
#include <math.h>
#include <string.h>

#include "baselines.h"

/* restrict: a careful user's spelling, and without it gcc gives up on backward's second
   loop (too many alias checks) and the baseline would be a strawman. */
void ln_bench_naive_forward(const float *restrict x, const float *restrict gamma,
                            const float *restrict beta, float *restrict y, float *restrict mean,
                            float *restrict rstd, size_t rows, size_t cols, float eps)
{
    const float inv_n = 1.0f / (float)cols;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = 0.0f;
        for (size_t i = 0; i < cols; i++)
            m += xr[i];
        m *= inv_n;
        float v = 0.0f;
        for (size_t i = 0; i < cols; i++)
            v += (xr[i] - m) * (xr[i] - m);
        const float s = 1.0f / sqrtf(v * inv_n + eps);
        for (size_t i = 0; i < cols; i++)
            yr[i] = (xr[i] - m) * s * gamma[i] + beta[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

void ln_bench_naive_backward(const float *restrict dy, const float *restrict x,
                             const float *restrict gamma, const float *restrict mean,
                             const float *restrict rstd, float *restrict dx,
                             float *restrict dgamma, float *restrict dbeta, size_t rows,
                             size_t cols)
{
    const float inv_n = 1.0f / (float)cols;
    memset(dgamma, 0, cols * sizeof *dgamma);
    memset(dbeta, 0, cols * sizeof *dbeta);
    for (size_t r = 0; r < rows; r++) {
        const float *dyr = dy + r * cols, *xr = x + r * cols;
        float *dxr = dx + r * cols;
        const float m = mean[r], s = rstd[r];
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (size_t i = 0; i < cols; i++) {
            const float g = dyr[i] * gamma[i];
            sum_g += g;
            sum_gx += g * (xr[i] - m) * s;
        }
        sum_g *= inv_n;
        sum_gx *= inv_n;
        for (size_t i = 0; i < cols; i++) {
            const float xhat = (xr[i] - m) * s;
            dxr[i] = s * (dyr[i] * gamma[i] - sum_g - xhat * sum_gx);
            dgamma[i] += dyr[i] * xhat;
            dbeta[i] += dyr[i];
        }
    }
}
