/* test_gelu_range.c - one ISA's GELU over the whole float range against the exact function
 * (long double) and against SLEEF's double functions (argv[1]: ISA). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sleef.h>

#include "gelu.h"
#include "gelu_ref.h"
#include "ln_internal.h"
#include "testutil.h"

/*
 * The bounds under test (include/layernorm.h states them), in ulps of the exact value:
 *   forward                           4 ulp wherever |f| >= 2^-100, both forms; below,
 *                                     4 ulp + 2^-149 (the subnormal result's rounding)
 *   backward, dx = dy f'(x) rounded   x >= -1, |x + 0.75| > 0.25: 3 ulp
 *                                     |x + 0.75| <= 0.25: 4 ulp, plus 8 2^-24 of what
 *                                     cancels between f''s two terms (they have opposite
 *                                     signs for x < 0 and cancel at f' = 0, x ~ -0.75;
 *                                     each takes ~8 roundings): |dy| (|a| + |b| - |a + b|)
 *                                     x < -1: 11 ulp (tanh), 7 ulp (erf)
 * plus 2^-149 wherever the result is subnormal. The backward's bounds are f''s error in
 * ulps of f'; dx = dy f' then carries |dy| times that, plus half an ulp of dx for its own
 * rounding (dy = 1: exact; dy ~ N(0, 1): the "dy rounding included" form). The
 * report's "off the zero" column is x >= -1 with |x + 0.75| > 0.25, as in test_gelu.
 * Off the zero the bound is the plain 3 ulp of f' (no cancellation allowance), so the
 * test fails if a kernel's sum of f''s terms takes an extra rounding (one took sigmoid's
 * or Phi's own rounding, 3.0 ulp at x ~ -0.36).
 */
#define FWD_ULP 4.0
#define BWD_ULP 4.0     /* near f' = 0, plus the cancellation allowance */
#define BWD_OFF_ULP 3.0 /* x >= -1 off the zero */
static const double bwd_low_ulp[2] = {11.0, 7.0}; /* [kind]: x < -1 */

static const ln_kernels *g_k;
static size_t g_n; /* points */
static float *g_x;
static double g_max[2][4]; /* [kind][fwd, bwd main, bwd x < -1, bwd zero zone / terms] */


/* The second, independent reference: SLEEF's double-precision erfc (u15), exp and tanh
   (u10) in the textbook forms where they do not cancel (tanh form: 1 + tanh for u >= 0,
   the sigmoid e / (1 + e) below). In double, with |x| <= 20 below (beyond, f is settled:
   the clamp's values), its relative error is a few 2^-53 plus the argument's rounding
   times the sensitivity (<= 2^-53 x^2 <= 2^-44), and near f' = 0 2^-52 of the terms. */
static double sleef_ref(double x, int kind, int grad)
{
    x = fmax(-LN_GELU_CLAMP, fmin(x, grad ? LN_GELU_CLAMP : INFINITY));
    if (isinf(x))
        return x;
    if (kind == LN_GELU_ERF) {
        const double phi = 0.5 * Sleef_erfc_u15(-x * LN_GELU_RSQRT2);
        return grad ? phi + x * Sleef_exp_u10(-0.5 * x * x) * LN_GELU_RSQRT2PI : x * phi;
    }
    const double u = 0.5 * LN_GELU_2C * (x + LN_GELU_K * x * x * x);
    const double dw = LN_GELU_2C * (1.0 + 3.0 * LN_GELU_K * x * x);
    double s, ds;
    if (u >= 0) {
        const double t = Sleef_tanh_u10(u);
        s = 0.5 * (1.0 + t), ds = 0.25 * (1.0 - t) * (1.0 + t);
    } else {
        const double e = Sleef_exp_u10(2.0 * u);
        s = e / (1.0 + e), ds = e / ((1.0 + e) * (1.0 + e));
    }
    return grad ? s + x * dw * ds : x * s;
}

/* The bound at x for a result near dy v (v = f or f'); *region gets the column of g_max
   it reports in. */
static double bound(double x, double v, int kind, int grad, double dy, int *region)
{
    v = fabs(v), dy = fabs(dy);
    double b;
    if (!grad) {
        *region = 0;
        b = FWD_ULP * gelu_ulp(v);
    } else if (x < -1) {
        *region = 2;
        b = bwd_low_ulp[kind] * gelu_ulp(v);
    } else {
        *region = fabs(x + 0.75) <= 0.25 ? 3 : 1;
        const double cancelled = fmax(0.0, gelu_grad_terms(x, kind) - v);
        b = *region == 1 ? BWD_OFF_ULP * gelu_ulp(v)
                         : BWD_ULP * gelu_ulp(v) + 8 * TU_EPS32 * cancelled;
    }
    /* dx = dy f' rounds once more, unless dy = 1 (exact: the bound is f''s alone) */
    const double dxr = dy == 1.0 ? 0.0 : 0.5 * gelu_ulp(dy * v);
    return grad ? dy * b + dxr + 0x1p-149 : b + 0x1p-149;
}

/* Points: every float bit pattern at a fixed stride (the whole range: zeros, subnormals,
   normals, infinities, NaNs), then [-20, 20] with |x| >= 2^-24 at a finer stride in bit
   space, where every regime of f lives. LN_TEST_QUICK (emulators) takes 1/64 of each. */
static size_t make_points(float *x, size_t per_part)
{
    size_t n = 0;
    const uint64_t stride = (UINT64_C(1) << 32) / per_part;
    for (size_t i = 0; i < per_part; i++) {
        const uint32_t u = (uint32_t)(i * stride + (i * 7919u) % stride);
        memcpy(&x[n++], &u, 4);
    }
    uint32_t lo, hi;
    const float flo = 0x1p-24f, fhi = LN_GELU_CLAMP;
    memcpy(&lo, &flo, 4), memcpy(&hi, &fhi, 4);
    for (size_t i = 0; i < per_part; i++) {
        const uint32_t u = lo + (uint32_t)((uint64_t)(hi - lo) * (i / 2) / (per_part / 2));
        memcpy(&x[n], &u, 4);
        if (i & 1)
            x[n] = -x[n];
        n++;
    }
    return n;
}

/* NaN stays NaN; the rest against both references. */
static void check(int kind, int grad, const float *dy, const float *out)
{
    for (size_t i = 0; i < g_n; i++) {
        const float x = g_x[i];
        const double d = dy ? dy[i] : 1.0;
        if (isnan(x)) {
            if (!isnan(out[i]))
                fail_msg("kind %d grad %d: NaN in, %.9g out", kind, grad, out[i]);
            continue;
        }
        const double fx = (double)gelu_exact(x, kind, grad), t = d * fx;
        if (isinf(t)) {
            if (out[i] != t)
                fail_msg("kind %d grad %d x %.9g: %.9g, not %g", kind, grad, x, out[i], t);
            continue;
        }
        int region;
        const double b = bound(x, fx, kind, grad, d, &region);
        const double err = fabs((double)out[i] - t);
        if (!(err <= b))
            fail_msg("kind %d grad %d x %.9g dy %.9g: %.9g vs exact %.17g (%.2f ulp)", kind, grad, x,
                     d, out[i], t, err / gelu_ulp(t));
        /* the report: f and f' themselves; near f' = 0 in ulps of its terms' size */
        const double unit = region == 3 ? gelu_ulp(gelu_grad_terms(x, kind)) : gelu_ulp(t);
        if (fabs(t) >= 0x1p-100 && d == 1.0)
            g_max[kind][region] = fmax(g_max[kind][region], err / unit);
        /* SLEEF: |out - s| <= |out - t| + |t - s|, the first within b (at f's ulp, which
           is at most gelu_ulp(|s| (1 + 2^-40))), the second within 2^-40 of the value (of the
           terms' size for f'). */
        const double sf = sleef_ref(x, kind, grad), s = d * sf;
        const double ds = 0x1p-40 * fabs(d) * (grad ? gelu_grad_terms(x, kind) : fabs(sf));
        const double bs = bound(x, fabs(sf) * (1 + 0x1p-40), kind, grad, d, &region) + ds;
        if (!(fabs((double)out[i] - s) <= bs))
            fail_msg("kind %d grad %d x %.9g: %.9g vs SLEEF %.17g", kind, grad, x, out[i], s);
    }
}

static void forward_whole_range(void **state)
{
    (void)state;
    float *y = malloc(g_n * 4);
    for (int kind = 0; kind < 2; kind++) {
        g_k->gelu_forward(g_x, y, g_n, kind);
        check(kind, 0, NULL, y);
    }
    free(y);
}

static void backward_whole_range(void **state)
{
    (void)state;
    float *dy = malloc(g_n * 4), *dx = malloc(g_n * 4);
    tu_rng r = {41};
    for (int kind = 0; kind < 2; kind++) {
        for (size_t i = 0; i < g_n; i++)
            dy[i] = 1.0f;
        g_k->gelu_backward(dy, g_x, dx, g_n, kind);
        check(kind, 1, NULL, dx);
        for (size_t i = 0; i < g_n; i++)
            dy[i] = (float)tu_normal(&r);
        g_k->gelu_backward(dy, g_x, dx, g_n, kind);
        check(kind, 1, dy, dx);
    }
    free(dy), free(dx);
}

/* Signed zeros and infinities exactly as documented: f(-0) = -0, f'(+-0) = 0.5,
   f(+-Inf) = +Inf, -0; f'(+-Inf) = 1, 0; subnormal x gives x / 2 (0.5 x rounded). */
static void specials(void **state)
{
    (void)state;
    const float x[5] = {-0.0f, 0.0f, INFINITY, -INFINITY, 0x1p-140f}, one[5] = {1, 1, 1, 1, 1};
    float y[5], d[5];
    for (int kind = 0; kind < 2; kind++) {
        g_k->gelu_forward(x, y, 5, kind);
        g_k->gelu_backward(one, x, d, 5, kind);
        assert_true(y[0] == 0.0f && signbit(y[0]) && y[1] == 0.0f && !signbit(y[1]));
        assert_true(d[0] == 0.5f && d[1] == 0.5f);
        assert_true(y[2] == INFINITY && y[3] == 0.0f && signbit(y[3]));
        assert_true(d[2] == 1.0f && d[3] == 0.0f);
        assert_true(y[4] == 0x1p-141f && d[4] == 0.5f);
    }
}

int main(int argc, char **argv)
{
    const int isa = argc > 1 ? tu_isa_from_name(argv[1]) : LN_ISA_SCALAR;
    g_k = ln_kernels_get(isa);
    if (!g_k) {
        printf("skip: GELU kernel for %s not compiled in or not runnable here\n",
               argc > 1 ? argv[1] : "?");
        return TU_SKIP;
    }
    const char *quick = getenv("LN_TEST_QUICK");
    const size_t per_part = quick && *quick == '1' ? (size_t)1 << 14 : (size_t)1 << 20;
    g_x = malloc(2 * per_part * 4);
    g_n = make_points(g_x, per_part);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(specials),
        cmocka_unit_test(forward_whole_range),
        cmocka_unit_test(backward_whole_range),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("%zu points; max ulp against the exact function (|result| >= 2^-100)\n", g_n);
    for (int kind = 0; kind < 2; kind++)
        printf("  %s: forward %.2f; backward x >= -1 off the zero %.2f, x < -1 %.2f, "
               "near the zero %.2f (ulps of its terms)\n",
               kind ? "erf " : "tanh", g_max[kind][0], g_max[kind][1], g_max[kind][2],
               g_max[kind][3]);
    free(g_x);
    return rc;
}
