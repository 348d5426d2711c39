/* test_reference.c - the scalar oracle against closed forms, long double and finite differences. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ln_internal.h"
#include "testutil.h"

static const ln_kernels *oracle(void) { return ln_kernels_get(LN_ISA_SCALAR); }

static unsigned g_flags; /* LN_FLAG_RMS_NORM for the RMSNorm variants of the tests */

static void fwd(const float *x, const float *g, const float *b, float *y, float *m, float *r,
                size_t rows, size_t cols, float eps)
{
    const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .beta = b, .y = y, .ldy = cols,
                           .mean = m, .rstd = r, .cols = cols, .eps = eps, .flags = g_flags};
    oracle()->forward(&a, 0, rows);
}

static void bwd(const float *dy, const float *x, const float *g, const float *m, const float *r,
                float *dx, float *dg, float *db, size_t rows, size_t cols)
{
    const ln_bwd_args a = {.dy = dy, .lddy = cols, .x = x, .ldx = cols, .gamma = g, .mean = m,
                           .rstd = r, .dx = dx, .lddx = cols, .cols = cols, .flags = g_flags};
    assert_int_equal(ln_backward_run(oracle(), &a, rows, dg, db), LN_OK);
}

/* The oracle computes in double and rounds once, so an output is within half an ulp
   (2^-24 relative) of the double result, which itself is within a few 2^-53 of exact. */
#define ROUND_ONCE (TU_EPS32 + 0x1p-48)

static void worked_example(void **state)
{
    (void)state;
    const float x[4] = {2, -1, 3, 0};
    float y[4], mean, rstd;
    fwd(x, NULL, NULL, y, &mean, &rstd, 1, 4, 0.0f);
    const double r = 1.0 / sqrt(2.5), expect[4] = {r, -2 * r, 2 * r, -r};
    assert_true(mean == 1.0f);
    assert_true(fabs(rstd - r) <= ROUND_ONCE * r);
    double sum = 0, sq = 0;
    for (int i = 0; i < 4; i++) {
        assert_true(fabs(y[i] - expect[i]) <= ROUND_ONCE * fabs(expect[i]));
        sum += y[i];
        sq += (double)y[i] * y[i];
    }
    /* Four outputs each off by <= 2^-24 relative (|y| <= 1.27). */
    assert_true(fabs(sum) <= 4 * 1.27 * ROUND_ONCE);
    assert_true(fabs(sq - 4.0) <= 4 * 2 * 1.27 * 1.27 * ROUND_ONCE);
}

/* With gamma = 1, beta = 0 each row of y has mean 0, variance var/(var + eps) and norm
   sqrt(n var/(var + eps)), the moments of exact xhat. Each y_i = t_i (1 + d_i), |d_i| <=
   ROUND_ONCE, so |mean(y)| <= ROUND_ONCE * mean|t| <= ROUND_ONCE * rms(t) (Cauchy-Schwarz),
   the second moment is off by <= 2 ROUND_ONCE relative, the norm by <= ROUND_ONCE. */
static void moments_of_normalized_rows(void **state)
{
    (void)state;
    static const size_t cols_list[] = {2, 3, 7, 64, 768, 1000, 4096};
    tu_rng rng = {42};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t n = cols_list[c], rows = 4;
        float *x = malloc(rows * n * sizeof *x), *y = malloc(rows * n * sizeof *y);
        tu_fill_normal(&rng, x, rows * n, 0.5, 2.0);
        fwd(x, NULL, NULL, y, NULL, NULL, rows, n, 1e-5f);
        for (size_t r = 0; r < rows; r++) {
            long double m, rs;
            tu_ref_stats(x + r * n, n, 1e-5f, &m, &rs);
            const long double var = 1.0L / (rs * rs) - 1e-5L, t2 = var / (var + 1e-5L);
            long double s = 0, q = 0;
            for (size_t i = 0; i < n; i++) {
                s += y[r * n + i];
                q += (long double)y[r * n + i] * y[r * n + i];
            }
            assert_true(fabsl(s / n) <= 1.01L * ROUND_ONCE * sqrtl(t2));
            assert_true(fabsl(q / n - t2) <= 2.02L * ROUND_ONCE * t2);
            assert_true(fabsl(sqrtl(q) - sqrtl(n * t2)) <= 1.01L * ROUND_ONCE * sqrtl(n * t2));
        }
        free(x);
        free(y);
    }
}

/* Against two passes in long double. Besides the final rounding, double Welford over n
   values errs by at most ~n 2^-53 relative to the row's magnitude |mu| + sigma; that
   moves xhat by n 2^-53 (1 + |mu|/sigma) per unit of |xhat| + 1, times |gamma|. */
static void matches_long_double_two_pass(void **state)
{
    (void)state;
    static const size_t cols_list[] = {1, 2, 5, 16, 100, 768, 1601, 4096, 65536};
    static const double offsets[] = {0.0, 1e2, 1e3, 1e4};
    tu_rng rng = {7};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++)
        for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++) {
            const size_t n = cols_list[c];
            float *x = malloc(n * sizeof *x), *g = malloc(n * sizeof *g);
            float *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
            long double *ref = malloc(n * sizeof *ref);
            tu_fill_normal(&rng, x, n, offsets[o], 1.0);
            tu_fill_normal(&rng, g, n, 0.0, 1.0);
            tu_fill_normal(&rng, b, n, 0.0, 1.0);
            float mean, rstd;
            fwd(x, g, b, y, &mean, &rstd, 1, n, 1e-5f);
            tu_ref_forward_row(x, g, b, n, 1e-5f, ref);
            long double m, rs;
            tu_ref_stats(x, n, 1e-5f, &m, &rs);
            const long double drift = 4.0L * n * 0x1p-53L * (1.0L + offsets[o]);
            for (size_t i = 0; i < n; i++) {
                const long double xhat = ((long double)x[i] - m) * rs;
                const long double tol = ROUND_ONCE * fabsl(ref[i]) +
                                        drift * fabsl((long double)g[i]) * (1.0L + fabsl(xhat));
                assert_true(fabsl(y[i] - ref[i]) <= tol);
            }
            assert_true(fabsl(mean - m) <= ROUND_ONCE * fabsl(m) + drift / rs);
            assert_true(fabsl(rstd - rs) <= (ROUND_ONCE + 2 * drift) * rs);
            free(x), free(g), free(b), free(y), free(ref);
        }
}

/* L(x, gamma, beta) = sum dy * y, in long double, the function whose gradient backward
   returns. Central differences with h = 1e-5 err by O(h^2 L''') ~ 1e-9 here. */
static long double loss(const long double *x, const long double *g, const long double *b,
                        const float *dy, size_t rows, size_t n)
{
    long double total = 0;
    for (size_t r = 0; r < rows; r++) {
        const long double *xr = x + r * n;
        long double m = 0, v = 0;
        for (size_t i = 0; i < n; i++)
            m += xr[i];
        m = g_flags ? 0 : m / n; /* RMSNorm: no centering */
        for (size_t i = 0; i < n; i++)
            v += (xr[i] - m) * (xr[i] - m);
        const long double rs = 1.0L / sqrtl(v / n + 1e-5L);
        for (size_t i = 0; i < n; i++)
            total += dy[r * n + i] * ((xr[i] - m) * rs * g[i] + b[i]);
    }
    return total;
}

static long double central_diff(long double *v, size_t i, const long double *x,
                                const long double *g, const long double *b, const float *dy,
                                size_t rows, size_t n)
{
    const long double h = 1e-5L, keep = v[i];
    v[i] = keep + h;
    const long double up = loss(x, g, b, dy, rows, n);
    v[i] = keep - h;
    const long double down = loss(x, g, b, dy, rows, n);
    v[i] = keep;
    return (up - down) / (2 * h);
}

/* The kernel's dx uses the float mean and rstd that forward saved, each 2^-24 off: the
   terms rstd*g, rstd*mean(g), rstd*xhat*mean(g xhat) then err by a few 2^-24 relative,
   plus xhat's shift of 2^-24 |mean| rstd. 16 ulp of that scale plus the FD error bound. */
static void backward_matches_finite_differences(void **state)
{
    (void)state;
    static const size_t cols_list[] = {1, 2, 3, 5, 8, 17};
    tu_rng rng = {99};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t n = cols_list[c], rows = 3, N = rows * n;
        float x[3 * 17], g[17], b[17], dy[3 * 17], y[3 * 17], dx[3 * 17], dg[17], db[17];
        float mean[3], rstd[3];
        long double xl[3 * 17], gl[17], bl[17];
        tu_fill_normal(&rng, x, N, 1.0, 1.5);
        tu_fill_normal(&rng, g, n, 0.0, 1.0);
        tu_fill_normal(&rng, b, n, 0.0, 1.0);
        tu_fill_normal(&rng, dy, N, 0.0, 1.0);
        for (size_t i = 0; i < N; i++)
            xl[i] = x[i];
        for (size_t i = 0; i < n; i++)
            gl[i] = g[i], bl[i] = b[i];
        fwd(x, g, b, y, mean, rstd, rows, n, 1e-5f);
        bwd(dy, x, g, mean, rstd, dx, dg, db, rows, n);
        for (size_t r = 0; r < rows; r++) {
            long double sg = 0, sgx = 0;
            for (size_t i = 0; i < n; i++) {
                sg += fabsl((long double)dy[r * n + i] * g[i]);
                sgx +=
                    fabsl((long double)dy[r * n + i] * g[i] * (x[r * n + i] - mean[r]) * rstd[r]);
            }
            for (size_t i = 0; i < n; i++) {
                const long double xhat = fabsl((x[r * n + i] - mean[r]) * (long double)rstd[r]);
                const long double scale =
                    rstd[r] * (fabsl((long double)dy[r * n + i] * g[i]) + sg / n + xhat * sgx / n);
                const long double tol =
                    16 * TU_EPS32 * scale * (1 + fabsl(mean[r]) * rstd[r]) + 1e-8L;
                const long double fd = central_diff(xl, r * n + i, xl, gl, bl, dy, rows, n);
                assert_true(fabsl(dx[r * n + i] - fd) <= tol);
            }
        }
        for (size_t i = 0; i < n; i++) {
            /* L is linear in gamma and beta, so the differences are exact up to rounding.
               dgamma sums dy * xhat over rows with xhat from the float stats: each term
               is off by <= 4 2^-24 |dy| (|xhat| + |mean| rstd), and dbeta sums dy exactly
               but for one final rounding. */
            long double budget = 0, sum_dy = 0;
            for (size_t r = 0; r < rows; r++) {
                const long double xhat = fabsl((x[r * n + i] - mean[r]) * (long double)rstd[r]);
                budget += fabsl((long double)dy[r * n + i]) * (xhat + fabsl(mean[r]) * rstd[r]);
                sum_dy += fabsl((long double)dy[r * n + i]);
            }
            const long double fdg = central_diff(gl, i, xl, gl, bl, dy, rows, n);
            const long double fdb = central_diff(bl, i, xl, gl, bl, dy, rows, n);
            assert_true(fabsl(dg[i] - fdg) <= 4 * TU_EPS32 * budget + 1e-8L);
            assert_true(fabsl(db[i] - fdb) <= TU_EPS32 * sum_dy + 1e-8L);
        }
    }
}

/* The same finite-difference checks for RMSNorm (mean 0, no mean(g) term). */
static void rms_backward_matches_finite_differences(void **state)
{
    g_flags = LN_FLAG_RMS_NORM;
    backward_matches_finite_differences(state);
    g_flags = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(worked_example),
        cmocka_unit_test(moments_of_normalized_rows),
        cmocka_unit_test(matches_long_double_two_pass),
        cmocka_unit_test(backward_matches_finite_differences),
        cmocka_unit_test(rms_backward_matches_finite_differences),
    };
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
