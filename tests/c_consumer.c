/* c_consumer.c - a user's C program: the v1.0 signatures declared verbatim must match the header. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "layernorm.h"

/* Redeclared exactly as the ABI promises them: any drift in the header is a compile error
   ("conflicting types"), any drift in the library a link or result failure below. */
int ln_forward_f32(const float *x, const float *gamma, const float *beta,
                   float *y, float *mean, float *rstd,
                   size_t rows, size_t cols, float eps);

int ln_backward_f32(const float *dy, const float *x,
                    const float *gamma, const float *mean, const float *rstd,
                    float *dx, float *dgamma, float *dbeta,
                    size_t rows, size_t cols);

int main(void)
{
    /* NUMERICS.md's worked example: mean 1, var 2.5, xhat = [1, -2, 2, -1] / sqrt(2.5). */
    const float x[4] = {2, -1, 3, 0}, gamma[4] = {1, 1, 1, 1}, beta[4] = {0, 0, 0, 0};
    float y[4], mean, rstd, dx[4], dgamma[4], dbeta[4];
    if (ln_forward_f32(x, gamma, beta, y, &mean, &rstd, 1, 4, 0.0f) != LN_OK)
        return 1;
    const double r = 1.0 / sqrt(2.5), want[4] = {r, -2 * r, 2 * r, -r};
    int bad = mean != 1.0f || fabs(rstd - r) > 1e-7 * r;
    for (int i = 0; i < 4; i++)
        bad |= fabs(y[i] - want[i]) > 1e-7 * fabs(want[i]); /* ~1 ulp of float */
    /* dy = xhat: dgamma = xhat^2 (sums to n), dbeta = xhat, and dx = 0 because a loss
       that only rescales the normalized row has no gradient through the normalization. */
    if (ln_backward_f32(y, x, gamma, &mean, &rstd, dx, dgamma, dbeta, 1, 4) != LN_OK)
        return 1;
    for (int i = 0; i < 4; i++) {
        bad |= fabs(dgamma[i] - want[i] * want[i]) > 1e-6;
        bad |= dbeta[i] != y[i];
        bad |= fabs(dx[i]) > 1e-6;
    }
    bad |= ln_forward_f32(x, gamma, beta, NULL, NULL, NULL, 1, 4, 1e-5f) != LN_ERR_NULL;
    printf("c_consumer: %s (isa %s, library %s)\n", bad ? "FAIL" : "ok",
           ln_isa_name(ln_get_isa()), ln_version_string());
    return bad;
}
