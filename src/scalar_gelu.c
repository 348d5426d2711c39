/* scalar_gelu.c - the GELU oracle: double precision with libm, the same cancellation-free forms. */
#include <math.h>

#include "gelu.h"
#include "ln_internal.h"

/* sigmoid(2u) and sigmoid(2u) (1 - sigmoid(2u)) = e / (1+e)^2, with e = exp(-2|u|). */
static void sigmoid2(double u, double *s, double *ds)
{
    const double e = exp(-2.0 * fabs(u)), r = 1.0 / (1.0 + e);
    *s = u >= 0.0 ? r : e * r;
    *ds = e * r * r;
}

static double u_of(double x) { return 0.5 * LN_GELU_2C * (x + LN_GELU_K * x * x * x); }

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

static double gelu(double x, int kind)
{
    if (isnan(x))
        return x;
    x = clamp(x, -LN_GELU_CLAMP, INFINITY);
    if (kind == LN_GELU_ERF)
        return 0.5 * x * erfc(-x * LN_GELU_RSQRT2);
    if (isinf(x))
        return x;
    double s, ds;
    sigmoid2(u_of(x), &s, &ds);
    return x * s;
}

static double gelu_grad(double x, int kind)
{
    if (isnan(x))
        return x;
    x = clamp(x, -LN_GELU_CLAMP, LN_GELU_CLAMP);
    if (kind == LN_GELU_ERF)
        return 0.5 * erfc(-x * LN_GELU_RSQRT2) + x * exp(-0.5 * x * x) * LN_GELU_RSQRT2PI;
    double s, ds;
    sigmoid2(u_of(x), &s, &ds);
    /* d/dx x s(2u) = s + x * 2u' * s (1 - s), 2u' = 2C (1 + 3K x^2) */
    return s + x * LN_GELU_2C * (1.0 + 3.0 * LN_GELU_K * x * x) * ds;
}

void ln_gelu_forward_scalar(const float *x, float *y, size_t n, int kind)
{
    kind &= ~LN_GELU_NT; /* ordinary stores only */
    for (size_t i = 0; i < n; i++)
        y[i] = (float)gelu(x[i], kind);
}

void ln_gelu_backward_scalar(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++)
        dx[i] = (float)((double)dy[i] * gelu_grad(x[i], kind));
}
