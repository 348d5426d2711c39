/* test_gelu.c - one ISA's GELU kernels against the double oracle and finite differences (argv[1]:
 * ISA). */
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

#include "gelu.h"
#include "gelu_ref.h"
#include "ln_internal.h"
#include "testutil.h"

static const ln_kernels *g_k; /* the record under test */
static const ln_kernels *g_o; /* the double oracle */
static double g_max_ulp[2][2];     /* [kind][fwd, bwd], x >= -3, for the report */


/* Test points: a fine grid over [-14, 14] where every regime lives, random normals, and
   the specials. */
static size_t points(float *x)
{
    size_t n = 0;
    for (int i = -14 * 256; i <= 14 * 256; i++)
        x[n++] = (float)i / 256.0f + (float)i * 1e-7f; /* off the grid too */
    tu_rng r = {3};
    for (int i = 0; i < 4000; i++)
        x[n++] = (float)(3.0 * tu_normal(&r));
    static const float sp[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 1e-40f,  -1e-40f, FLT_MIN,
                               30.0f, -30.0f, 1e10f,  -1e10f,  FLT_MAX, -FLT_MAX};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++)
        x[n++] = sp[i];
    return n;
}
#define NPTS (28 * 256 + 1 + 4000 + 13)

/* Sensitivity of f to a relative error in the argument of its special function, in
   double: tanh form, d f / d(log w) = x s (1 - s) w with w = 2u; erf form,
   0.5 x erfc'(z) z with z = -x / sqrt 2. Both grow like x^2 |f| for x << 0: GELU falls
   like exp(-x^2/2) there, so a float argument (relative error 2^-24) would cost that
   many ulps. The kernels form the argument in float-float (gelu.h), which leaves a
   relative error of a few 2^-48 (the low part's own roundings, the neglected lo^2); the
   tests allow 16 2^-48 times this sensitivity. The backward's second term shares it. */
static double arg_term(double x, int kind, int grad)
{
    x = fmax(-LN_GELU_CLAMP, fmin(x, LN_GELU_CLAMP));
    if (kind == LN_GELU_ERF) {
        const double z = -x * LN_GELU_RSQRT2, pdf = exp(-z * z) / 1.7724538509055160273;
        /* erfc'(z) = -2 pdf with pdf = exp(-z^2) / sqrt(pi); x phi(x) = x pdf / sqrt 2 */
        return grad ? 3 * (fabs(pdf * z) + 0.5 * fabs(x * x * x) * pdf * LN_GELU_RSQRT2)
                    : 2 * fabs(0.5 * x * 2 * pdf * z);
    }
    const double w = LN_GELU_2C * (x + LN_GELU_K * x * x * x), e = exp(-fabs(w));
    const double ds = e / ((1 + e) * (1 + e)), s = w >= 0 ? 1 / (1 + e) : e / (1 + e);
    const double dw = LN_GELU_2C * (1 + 3 * LN_GELU_K * x * x);
    return grad ? 7 * (ds * fabs(w) * (1 + fabs(x * dw * (1 - 2 * s)))) : 6 * fabs(x * ds * w);
}

/* Absolute error floors where an intermediate is tiny: SLEEF documents erfcf's error as
   max(1.5 ulp, FLT_MIN), so 0.5 |x| FLT_MIN for the erf form (its f is < 1e-30 wherever
   that exceeds 1.5 ulp); a subnormal exp result (sigmoid e, or the erf form's pdf) is
   off by up to 2^-149 absolute, which the forward multiplies by |x| and the backward by
   |x w'| (tanh) or |x| (erf), plus the subnormal rounding of the result itself. */
static double tiny_term(double x, int kind, int grad)
{
    x = fmax(-LN_GELU_CLAMP, fmin(x, LN_GELU_CLAMP));
    const double dw = LN_GELU_2C * (1 + 3 * LN_GELU_K * x * x);
    if (kind == LN_GELU_ERF)
        return 0.5 * (1 + fabs(x)) * FLT_MIN + 0x1p-149 * (2 + fabs(x));
    return 0x1p-149 * (2 + fabs(x) * (grad ? dw : 1));
}

/*
 * The scalar kernel IS the double oracle, so it is checked against gelu_ref.h's independent
 * long-double evaluation of the definitions (the exact constants sqrt(2/pi) and
 * 0.044715, the same non-cancelling forms, no clamp) instead of itself. It computes in
 * double and rounds once, so it is within half a float ulp plus its double roundings:
 * relative 2^-50 (libm's exp/erfc and a few operations, ~8 2^-53) of the value, and of
 * its argument through the sensitivity arg_term; below FLT_MIN gelu_ulp() is 2^-149, so
 * half of it covers the subnormal rounding.
 */

static double scalar_tol(double ref, double x, int kind, int grad, double dy)
{
    const double size = grad ? gelu_grad_terms(x, kind) : fabs(ref);
    return 0.5 * gelu_ulp(ref) + 0x1p-50 * fabs(dy) * (arg_term(x, kind, grad) + size);
}

/* Forward: within 4 ulp of the double oracle (exp 1 ulp, erfc 1.5 ulp, then 1 + e, the
   division, e r and x s, each half an ulp), plus the argument term, plus tiny_term. */
static void forward_accuracy(void **state)
{
    (void)state;
    float *x = malloc(NPTS * sizeof *x), *y = malloc(NPTS * sizeof *y),
          *yr = malloc(NPTS * sizeof *yr);
    const size_t n = points(x);
    for (int kind = 0; kind < 2; kind++) {
        g_k->gelu_forward(x, y, n, kind);
        g_o->gelu_forward(x, yr, n, kind);
        for (size_t i = 0; i < n; i++) {
            if (g_k == g_o) { /* the oracle: against long double, at its own bound */
                const double t = (double)gelu_exact(x[i], kind, 0), err = fabs((double)y[i] - t);
                if (!(err <= scalar_tol(t, x[i], kind, 0, 1.0)))
                    fail_msg("kind %d x %.9g: %.9g vs long double %.17g", kind, x[i], y[i], t);
                if (fabs(t) >= 0x1p-100)
                    g_max_ulp[kind][0] = fmax(g_max_ulp[kind][0], err / gelu_ulp(t));
                continue;
            }
            const double err = fabs((double)y[i] - yr[i]);
            const double tol =
                4 * gelu_ulp(yr[i]) + arg_term(x[i], kind, 0) * 16 * 0x1p-48 + tiny_term(x[i], kind, 0);
            if (!(err <= tol))
                fail_msg("kind %d x %.9g: %.9g vs %.9g (%.1f ulp)", kind, x[i], y[i], yr[i],
                         err / gelu_ulp(yr[i]));
            if (fabs(yr[i]) >= 0x1p-100) /* above where tiny_term matters */
                g_max_ulp[kind][0] = fmax(g_max_ulp[kind][0], err / gelu_ulp(yr[i]));
        }
    }
    free(x), free(y), free(yr);
}

/* Backward: dx = dy f'(x) within 4 ulp, plus 8 2^-24 of its terms' size (each term takes
   about 8 roundings: x^2, the fma, 2C, exp, 1 + e, the division, two products), plus the
   argument term; dy = 1 and dy ~ N(0, 1). */
static void backward_accuracy(void **state)
{
    (void)state;
    float *x = malloc(NPTS * 4), *dy = malloc(NPTS * 4), *dx = malloc(NPTS * 4),
          *dxr = malloc(NPTS * 4);
    const size_t n = points(x);
    tu_rng r = {23};
    for (int rep = 0; rep < 2; rep++)
        for (int kind = 0; kind < 2; kind++) {
            for (size_t i = 0; i < n; i++)
                dy[i] = rep ? (float)tu_normal(&r) : 1.0f;
            g_k->gelu_backward(dy, x, dx, n, kind);
            g_o->gelu_backward(dy, x, dxr, n, kind);
            for (size_t i = 0; i < n; i++) {
                if (g_k == g_o) { /* the oracle: against long double, at its own bound */
                    const double t = (double)(dy[i] * gelu_exact(x[i], kind, 1));
                    const double err = fabs((double)dx[i] - t);
                    if (!(err <= scalar_tol(t, x[i], kind, 1, dy[i])))
                        fail_msg("kind %d x %.9g: %.9g vs long double %.17g", kind, x[i], dx[i], t);
                    if (x[i] >= -1 && fabs(x[i] + 0.75) > 0.25)
                        g_max_ulp[kind][1] = fmax(g_max_ulp[kind][1], err / gelu_ulp(t));
                    continue;
                }
                const double err = fabs((double)dx[i] - dxr[i]);
                const double tol =
                    4 * gelu_ulp(dxr[i]) +
                    fabs(dy[i]) * TU_EPS32 *
                        (8 * gelu_grad_terms(x[i], kind) + arg_term(x[i], kind, 1) * 16 * 0x1p-24) +
                    fabs(dy[i]) * tiny_term(x[i], kind, 1);
                if (!(err <= tol))
                    fail_msg("kind %d x %.9g: %.9g vs %.9g (%.1f ulp)", kind, x[i], dx[i], dxr[i],
                             err / gelu_ulp(dxr[i]));
                if (x[i] >= -1 && fabs(x[i] + 0.75) > 0.25)
                    g_max_ulp[kind][1] = fmax(g_max_ulp[kind][1], err / gelu_ulp(dxr[i]));
            }
        }
    free(x), free(dy), free(dx), free(dxr);
}

/* The kernel's backward against central differences of its own forward, h = 2^-6, x on a
   2^-8 grid in [-6, 6] (x +- h exact): truncation h^2 |f'''| / 6 <= 2^-12 * 1.2 / 6 (|f'''|
   of both forms stays below 1.2) plus the forward's rounding, 2 * (4 ulp + 2^-24 arg)
   / 2h <= 2^-18 * 2^5 (|f| <= 6 here, 4 ulp <= 2^-19 * 6 < 2^-16... bounded by 2^-13). */
static void backward_vs_finite_differences(void **state)
{
    (void)state;
    enum { N = 12 * 256 + 1 };
    float *x = malloc(3 * N * 4), *y = malloc(3 * N * 4), *one = malloc(N * 4), *d = malloc(N * 4);
    const float h = 0x1p-6f;
    for (int i = 0; i < N; i++) {
        const float v = (float)(i - 6 * 256) / 256.0f;
        x[i] = v, x[N + i] = v + h, x[2 * N + i] = v - h, one[i] = 1.0f;
    }
    for (int kind = 0; kind < 2; kind++) {
        g_k->gelu_forward(x, y, 3 * N, kind);
        g_k->gelu_backward(one, x, d, N, kind);
        for (int i = 0; i < N; i++) {
            const double fd = ((double)y[N + i] - y[2 * N + i]) / (2.0 * h);
            assert_true(fabs(fd - d[i]) <= 0x1p-12 * 1.2 / 6 + 0x1p-13);
        }
    }
    free(x), free(y), free(one), free(d);
}

/* The oracle itself: against the textbook forms in long double where they do not cancel
   (x >= -2: 1 + tanh and 1 + erf >= 0.04), and its derivative against central
   differences of the long-double forms (h = 1e-6: truncation ~1e-12, rounding ~1e-13). */
static long double textbook(long double x, int kind)
{
    if (kind == LN_GELU_ERF)
        return 0.5L * x * (1.0L + erfl(x / sqrtl(2.0L)));
    return 0.5L * x *
           (1.0L + tanhl(sqrtl(2.0L / 3.14159265358979323846264L) * (x + 0.044715L * x * x * x)));
}

static void oracle_vs_textbook(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++)
        for (int i = -2 * 64; i <= 8 * 64; i++) {
            const float x = (float)i / 64.0f + 1e-3f;
            float y, d;
            const float one = 1.0f;
            g_o->gelu_forward(&x, &y, 1, kind);
            g_o->gelu_backward(&one, &x, &d, 1, kind);
            const long double ref = textbook(x, kind);
            const long double fd = (textbook(x + 1e-6L, kind) - textbook(x - 1e-6L, kind)) / 2e-6L;
            assert_true(fabsl(y - ref) <= 0.5L * gelu_ulp((double)ref) + 1e-15L * fabsl(ref));
            assert_true(fabsl(d - fd) <= 0.5L * gelu_ulp((double)fd) + 1e-9L);
        }
}

/* NaN in, NaN out; f(+Inf) = +Inf, f(-Inf) = -0; f'(+-Inf) = 1, 0. */
static void specials(void **state)
{
    (void)state;
    const float x[4] = {NAN, INFINITY, -INFINITY, 0.0f}, one[4] = {1, 1, 1, 1};
    float y[4], d[4];
    for (int kind = 0; kind < 2; kind++) {
        g_k->gelu_forward(x, y, 4, kind);
        g_k->gelu_backward(one, x, d, 4, kind);
        assert_true(isnan(y[0]) && isnan(d[0]));
        assert_true(y[1] == INFINITY && d[1] == 1.0f);
        assert_true(y[2] == 0.0f && signbit(y[2]) && d[2] == 0.0f);
        assert_true(y[3] == 0.0f && d[3] == 0.5f);
    }
}

/* Every length 1..140 flush against a guard page at the end and at the start (tails are
   masked), and in place (y == x, dx == dy, dx == x) gives the out-of-place bits. So does
   the forward asked to stream (LN_GELU_NT: a masked head up to y's alignment, then
   non-temporal stores on x86; flush at the end, y takes every alignment as n varies). */
static void guard_pages_and_in_place(void **state)
{
    (void)state;
    tu_rng r = {29};
    for (int at_end = 0; at_end < 2; at_end++)
        for (size_t n = 1; n <= 140; n++)
            for (int kind = 0; kind < 2; kind++) {
                tu_guard G[5];
                float *x = tu_guard_alloc(&G[0], n, at_end), *y = tu_guard_alloc(&G[1], n, at_end);
                float *dy = tu_guard_alloc(&G[2], n, at_end),
                      *dx = tu_guard_alloc(&G[3], n, at_end), *ys = tu_guard_alloc(&G[4], n, at_end);
                float io[140];
                tu_fill_normal(&r, x, n, 0, 3);
                tu_fill_normal(&r, dy, n, 0, 1);
                g_k->gelu_forward(x, y, n, kind);
                g_k->gelu_backward(dy, x, dx, n, kind);
                memcpy(io, x, n * 4);
                g_k->gelu_forward(io, io, n, kind);
                assert_memory_equal(io, y, n * 4);
                g_k->gelu_forward(x, ys, n, kind | LN_GELU_NT);
                assert_memory_equal(ys, y, n * 4);
                memcpy(io, x, n * 4);
                g_k->gelu_forward(io, io, n, kind | LN_GELU_NT);
                assert_memory_equal(io, y, n * 4);
                memcpy(io, dy, n * 4);
                g_k->gelu_backward(io, x, io, n, kind);
                assert_memory_equal(io, dx, n * 4);
                memcpy(io, x, n * 4);
                g_k->gelu_backward(dy, io, io, n, kind);
                assert_memory_equal(io, dx, n * 4);
                for (int i = 0; i < 5; i++)
                    tu_guard_free(&G[i]);
            }
}

int main(int argc, char **argv)
{
    const int isa = argc > 1 ? tu_isa_from_name(argv[1]) : LN_ISA_SCALAR;
    g_k = ln_kernels_get(isa);
    g_o = ln_kernels_get(LN_ISA_SCALAR);
    if (!g_k) {
        printf("skip: GELU kernel for %s not compiled in or not runnable here\n",
               argc > 1 ? argv[1] : "?");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(oracle_vs_textbook), cmocka_unit_test(forward_accuracy),
        cmocka_unit_test(backward_accuracy),  cmocka_unit_test(backward_vs_finite_differences),
        cmocka_unit_test(specials),
    };
    /* "guard" after the ISA runs only the guard-page test (emulators may mis-fault). */
    const struct CMUnitTest guard_tests[] = {cmocka_unit_test(guard_pages_and_in_place)};
    const int rc = argc > 2 && strcmp(argv[2], "guard") == 0
                       ? cmocka_run_group_tests(guard_tests, NULL, NULL)
                       : cmocka_run_group_tests(tests, NULL, NULL);
    printf("max ulp (forward: |f| >= 2^-100; backward: x >= -1, away from f' = 0): tanh fwd %.2f "
           "bwd %.2f, erf fwd %.2f bwd %.2f\n",
           g_max_ulp[0][0], g_max_ulp[0][1], g_max_ulp[1][0], g_max_ulp[1][1]);
    return rc;
}
