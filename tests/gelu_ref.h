/* gelu_ref.h - GELU tests' shared references: float ulps, exact f and f' (long double), f''s terms. */
#ifndef LN_TESTS_GELU_REF_H
#define LN_TESTS_GELU_REF_H

#include <float.h>
#include <math.h>

#include "gelu.h"
#include "layernorm.h"

/* ulp of a float near v: 2^(e - 23) for |v| in [2^e, 2^(e+1)), 2^-149 below FLT_MIN. */
static inline double gelu_ulp(double v)
{
    if (fabs(v) < FLT_MIN)
        return 0x1p-149;
    int e;
    frexp(v, &e);
    return ldexp(1.0, e - 24);
}

/* f (grad 0) or f' (grad 1) in long double (64-bit mantissa on x86, 113 on AArch64): the
   definitions with the exact constants sqrt(2/pi) and 0.044715, in the forms that do not
   cancel, no clamp; f(+-Inf) = +Inf, -0 and f'(+-Inf) = 1, 0 as their limits. */
static inline long double gelu_exact(long double x, int kind, int grad)
{
    const long double pi = 3.14159265358979323846264338327950288L;
    if (isinf(x))
        return grad ? (x > 0) : (x > 0 ? x : -0.0L);
    if (kind == LN_GELU_ERF) {
        const long double z = -x / sqrtl(2.0L);
        return grad ? 0.5L * erfcl(z) + x * expl(-0.5L * x * x) / sqrtl(2.0L * pi)
                    : 0.5L * x * erfcl(z);
    }
    const long double c2 = 2.0L * sqrtl(2.0L / pi), k = 0.044715L;
    const long double w = c2 * (x + k * x * x * x), e = expl(-fabsl(w)), r = 1.0L / (1.0L + e);
    const long double sg = w >= 0 ? r : e * r; /* sigmoid(w) */
    return grad ? sg + x * c2 * (1.0L + 3.0L * k * x * x) * e * r * r : x * sg;
}

/* The size of the derivative's terms, s and x w' s(1-s) (erf: 0.5 erfc and x pdf): each
   is computed to a few roundings of itself, and they cancel near f' = 0 (x ~ -0.75). */
static inline double gelu_grad_terms(double x, int kind)
{
    x = fmax(-LN_GELU_CLAMP, fmin(x, LN_GELU_CLAMP));
    if (kind == LN_GELU_ERF)
        return 0.5 * erfc(-x * LN_GELU_RSQRT2) + fabs(x) * exp(-0.5 * x * x) * LN_GELU_RSQRT2PI;
    const double w = LN_GELU_2C * (x + LN_GELU_K * x * x * x), e = exp(-fabs(w));
    const double s = w >= 0 ? 1 / (1 + e) : e / (1 + e);
    return s + fabs(x) * LN_GELU_2C * (1 + 3 * LN_GELU_K * x * x) * e / ((1 + e) * (1 + e));
}

#endif
