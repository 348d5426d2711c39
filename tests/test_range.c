/* test_range.c - the documented range: finite outputs below the |x - mean| limit, contained rows beyond it. */
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

#include "layernorm.h"
#include "testutil.h"

static int g_isa;

static const size_t k_cols[] = {1, 2, 3, 7, 16, 33, 768, 4099};
#define N_OF(a) (sizeof(a) / sizeof *(a))

/* include/layernorm.h: finite outputs while every |x_i - mean| < 1e19 / sqrt(cols). */
static long double limit_of(size_t n) { return 1e19L / sqrtl((long double)n); }

static long double max_dev(const float *x, size_t n)
{
    long double m = 0, d = 0;
    for (size_t i = 0; i < n; i++)
        m += x[i];
    m /= (long double)n;
    for (size_t i = 0; i < n; i++)
        d = fmaxl(d, fabsl(x[i] - m));
    return d;
}

enum { P_ALTERNATE, P_OUTLIER, P_OFFSET, P_UNIFORM, P_COUNT };

/* A row shape with unit spread; scaled to the limit below. */
static void pattern(int kind, float *x, size_t n, tu_rng *rng)
{
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case P_ALTERNATE: x[i] = (i & 1) ? -1.0f : 1.0f; break;
        case P_OUTLIER: x[i] = i == n / 2 ? 1.0f : 0.0f; break;
        case P_OFFSET: x[i] = (float)(1e6 + ((i & 1) ? -1.0 : 1.0)); break;
        default: x[i] = (float)(2.0 * tu_uniform(rng) - 1.0); break;
        }
    }
}

/* Scale the row until its largest deviation, measured on the rounded floats, sits just
   under the limit: 0.999 of it, so every kernel is held to the documented promise. */
static void scale_to_limit(float *x, const float *unit, size_t n)
{
    const long double lim = limit_of(n), d0 = max_dev(unit, n);
    long double s = d0 > 0 ? 0.999L * lim / d0 : 1;
    for (;;) {
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(unit[i] * s);
        if (max_dev(x, n) < lim)
            return;
        s *= 0.999L;
    }
}

static int all_finite(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i]))
            return 0;
    return 1;
}

/* Inside the range every output of forward and of backward is finite, with and
   without gamma/beta and with eps = 0 (the spread itself keeps var + eps away from 0). */
static void finite_inside_limit(void **state)
{
    (void)state;
    tu_rng rng = {11};
    const size_t rows = P_COUNT;
    for (size_t c = 0; c < N_OF(k_cols); c++) {
        const size_t n = k_cols[c], N = rows * n;
        float *x = malloc(N * sizeof *x), *unit = malloc(n * sizeof *unit);
        float *y = malloc(N * sizeof *y), *dy = malloc(N * sizeof *dy), *dx = malloc(N * sizeof *dx);
        float *g = malloc(n * sizeof *g), *b = malloc(n * sizeof *b);
        float *dg = malloc(n * sizeof *dg), *db = malloc(n * sizeof *db), mean[P_COUNT], rstd[P_COUNT];
        for (int k = 0; k < P_COUNT; k++) {
            pattern(k, unit, n, &rng);
            scale_to_limit(x + (size_t)k * n, unit, n);
        }
        tu_fill_normal(&rng, g, n, 0.0, 1.0);
        tu_fill_normal(&rng, b, n, 0.0, 1.0);
        tu_fill_normal(&rng, dy, N, 0.0, 1.0);
        /* eps = 0 only where every row has a spread: a one-column row is constant, and a
           constant row with eps = 0 is documented to give NaN. */
        for (int variant = 0; variant < (n > 1 ? 4 : 2); variant++) {
            const float *gg = variant & 1 ? g : NULL, *bb = variant & 1 ? b : NULL;
            const float eps = variant & 2 ? 0.0f : 1e-5f;
            assert_int_equal(ln_forward_f32(x, gg, bb, y, mean, rstd, rows, n, eps), LN_OK);
            for (size_t r = 0; r < rows; r++) {
                if (!all_finite(y + r * n, n) || !isfinite(mean[r]) || !isfinite(rstd[r]))
                    fail_msg("%s: cols %zu pattern %zu eps %g: non-finite forward output",
                             ln_isa_name(g_isa), n, r, (double)eps);
            }
            assert_int_equal(ln_backward_f32(dy, x, gg, mean, rstd, dx, dg, db, rows, n), LN_OK);
            assert_true(all_finite(dx, N));
            assert_true(all_finite(dg, n));
            assert_true(all_finite(db, n));
        }
        free(x), free(unit), free(y), free(dy), free(dx), free(g), free(b), free(dg), free(db);
    }
}

/* The limit is on |x - mean|, not on |x|: rows at the top of the float range with no or
   a small spread are inside it. A kernel must never form x or mean alone times rstd
   (FLT_MAX * rstd overflows), not even in masked-off tail lanes, whose 0 - mean times
   rstd is -Inf and turns 0 * Inf into a NaN that spreads through the row's sums.
   Odd column counts put every row into a tail. */
static void extreme_offsets_inside_limit(void **state)
{
    (void)state;
    static const float offs[] = {FLT_MAX, -FLT_MAX, 1e38f, -3e37f, 1e25f};
    static const size_t cols[] = {1, 3, 7, 17, 34, 61};
    tu_rng rng = {13};
    for (size_t c = 0; c < N_OF(cols); c++) {
        const size_t n = cols[c], rows = 2 * N_OF(offs), N = rows * n;
        float x[2 * 5 * 61], y[2 * 5 * 61], dy[2 * 5 * 61], dx[2 * 5 * 61], g[61], b[61];
        float dg[61], db[61], mean[10], rstd[10];
        for (size_t k = 0; k < N_OF(offs); k++)
            for (size_t i = 0; i < n; i++) {
                x[2 * k * n + i] = offs[k];                                   /* constant */
                x[(2 * k + 1) * n + i] = (i & 1) ? nextafterf(offs[k], 0) : offs[k]; /* 1 ulp */
            }
        for (size_t r = 0; r < rows; r++)
            if (max_dev(x + r * n, n) >= limit_of(n)) /* 1 ulp of FLT_MAX is 2e31: beyond */
                for (size_t i = 0; i < n; i++)
                    x[r * n + i] = x[r * n];
        tu_fill_normal(&rng, g, n, 1.0, 0.5);
        tu_fill_normal(&rng, b, n, 0.0, 1.0);
        tu_fill_normal(&rng, dy, N, 0.0, 1.0);
        assert_int_equal(ln_forward_f32(x, g, b, y, mean, rstd, rows, n, 1e-5f), LN_OK);
        assert_int_equal(ln_backward_f32(dy, x, g, mean, rstd, dx, dg, db, rows, n), LN_OK);
        for (size_t r = 0; r < rows; r++)
            if (!all_finite(y + r * n, n) || !all_finite(dx + r * n, n) || !isfinite(mean[r]) ||
                !isfinite(rstd[r]))
                fail_msg("%s: cols %zu row %zu (x0 = %g): non-finite output", ln_isa_name(g_isa),
                         n, r, (double)x[r * n]);
        assert_true(all_finite(dg, n));
        assert_true(all_finite(db, n));
    }
}

/* eps itself may be as large as FLT_MAX, and var + eps then overflows float even for a
   small spread; the kernels must not turn that Inf into rstd = 0 (y = 0 where double gives
   xhat ~ 0.4). Rows at the limit and well inside it, held to the forward contract's tau
   (NUMERICS.md: 4e-6 for n <= 16384): the rstd relative, y (no gamma, beta) absolute
   times 1 + |xhat|. */
static void eps_at_top_of_float(void **state)
{
    (void)state;
    static const float eps[] = {3e38f, FLT_MAX};
    enum { ROWS = 3 };
    tu_rng rng = {14};
    for (size_t c = 0; c < N_OF(k_cols); c++) {
        const size_t n = k_cols[c], N = ROWS * n;
        float *x = malloc(N * sizeof *x), *unit = malloc(n * sizeof *unit), *y = malloc(N * sizeof *y);
        long double *yref = malloc(n * sizeof *yref);
        assert_true(x && unit && y && yref);
        pattern(P_ALTERNATE, unit, n, &rng);
        scale_to_limit(x, unit, n);
        pattern(P_UNIFORM, unit, n, &rng);
        scale_to_limit(x + n, unit, n);
        for (size_t i = 0; i < n; i++)
            x[n + i] *= 1e-3f;
        tu_fill_normal(&rng, x + 2 * n, n, 0.0, 1.0);
        for (size_t e = 0; e < N_OF(eps); e++) {
            float mean[ROWS], rstd[ROWS];
            assert_int_equal(ln_forward_f32(x, NULL, NULL, y, mean, rstd, ROWS, n, eps[e]), LN_OK);
            for (size_t r = 0; r < ROWS; r++) {
                long double m, rs;
                tu_ref_stats(x + r * n, n, eps[e], &m, &rs);
                tu_ref_forward_row(x + r * n, NULL, NULL, n, eps[e], yref);
                if (!(fabsl(rstd[r] - rs) <= 4e-6L * rs))
                    fail_msg("%s: cols %zu row %zu eps %g: rstd %g want %Lg", ln_isa_name(g_isa),
                             n, r, (double)eps[e], (double)rstd[r], rs);
                for (size_t i = 0; i < n; i++)
                    if (!(fabsl(y[r * n + i] - yref[i]) <= 4e-6L * (1 + fabsl(yref[i]))))
                        fail_msg("%s: cols %zu row %zu eps %g col %zu: y %g want %Lg",
                                 ln_isa_name(g_isa), n, r, (double)eps[e], i,
                                 (double)y[r * n + i], yref[i]);
            }
        }
        free(x), free(unit), free(y), free(yref);
    }
}

/* Rows beyond the limit, each alone, finite: any outputs, but scalar's stay finite. */
static const float k_beyond[][4] = {
    {FLT_MAX, -FLT_MAX, FLT_MAX, -FLT_MAX},
    {1e30f, -1e30f, 0.0f, 1e30f},
    {FLT_MAX, 0.0f, 0.0f, 0.0f},
    {-FLT_MAX, -FLT_MAX, -FLT_MAX, FLT_MAX},
    {2e19f, -2e19f, 2e19f, -2e19f},
};

#define PAD 8

/* Beyond the limit the call still succeeds and touches only its own rows: rows 0 and
   2 of [normal, beyond, normal] are bitwise what they are alone, nothing outside the
   outputs moves (guard page after y and dx, sentinels before), and the scalar kernel,
   which works in double, gives finite values even there. */
static void contained_beyond_limit(void **state)
{
    (void)state;
    tu_rng rng = {12};
    const size_t n = 4, rows = 3, N = rows * n;
    tu_guard gy, gdx;
    float *ybuf = tu_guard_alloc(&gy, N + PAD, 1), *dxbuf = tu_guard_alloc(&gdx, N + PAD, 1);
    assert_non_null(ybuf);
    assert_non_null(dxbuf);
    float *y = ybuf + PAD, *dx = dxbuf + PAD;
    for (size_t k = 0; k < N_OF(k_beyond); k++) {
        float x[12], dy[12], g[4], solo_y[4], solo_dx[4], mean[3], rstd[3], sm, sr, dg[4], db[4];
        tu_fill_normal(&rng, x, N, 0.0, 1.0);
        tu_fill_normal(&rng, dy, N, 0.0, 1.0);
        tu_fill_normal(&rng, g, n, 1.0, 0.5);
        memcpy(x + n, k_beyond[k], sizeof k_beyond[k]);
        assert_true(max_dev(x + n, n) >= limit_of(n));
        tu_sentinel_fill(ybuf, N + PAD);
        tu_sentinel_fill(dxbuf, N + PAD);
        assert_int_equal(ln_forward_f32(x, g, NULL, y, mean, rstd, rows, n, 1e-5f), LN_OK);
        assert_int_equal(ln_backward_f32(dy, x, g, mean, rstd, dx, dg, db, rows, n), LN_OK);
        assert_true(tu_sentinel_intact(ybuf, PAD));
        assert_true(tu_sentinel_intact(dxbuf, PAD));
        for (size_t r = 0; r < rows; r += 2) {
            assert_int_equal(ln_forward_f32(x + r * n, g, NULL, solo_y, &sm, &sr, 1, n, 1e-5f), LN_OK);
            assert_memory_equal(solo_y, y + r * n, sizeof solo_y);
            assert_memory_equal(&sm, &mean[r], sizeof sm);
            assert_memory_equal(&sr, &rstd[r], sizeof sr);
            assert_int_equal(ln_backward_f32(dy + r * n, x + r * n, g, &sm, &sr, solo_dx, NULL,
                                             NULL, 1, n), LN_OK);
            assert_memory_equal(solo_dx, dx + r * n, sizeof solo_dx);
        }
        if (g_isa == LN_ISA_SCALAR) {
            assert_true(all_finite(y + n, n));
            assert_true(isfinite(mean[1]) && isfinite(rstd[1]));
        }
    }
    tu_guard_free(&gy);
    tu_guard_free(&gdx);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (g_isa = tu_isa_from_name(argv[1])) < 0) {
        fprintf(stderr, "usage: %s ISA\n", argv[0]);
        return 2;
    }
    if (!ln_isa_available(g_isa)) {
        printf("# %s not available here: skipped\n", argv[1]);
        return TU_SKIP;
    }
    if (ln_set_max_isa(g_isa) != LN_OK || ln_get_isa() != g_isa)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finite_inside_limit),
        cmocka_unit_test(extreme_offsets_inside_limit),
        cmocka_unit_test(eps_at_top_of_float),
        cmocka_unit_test(contained_beyond_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
