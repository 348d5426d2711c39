/* test_bf16.c - one ISA's bf16 LayerNorm against the f32 oracle on widened inputs (argv[1]). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bf16.h"
#include "ln_internal.h"
#include "testutil.h"

static const ln_kernels *g_k;      /* the record under test */
static const ln_kernels *g_native; /* the ISA's BF16-instruction record, if runnable */
static int g_max_ulp;                   /* largest bf16 ulp distance seen, for the report */

static void fill_bf16(tu_rng *r, uint16_t *p, size_t n, double mu, double sigma)
{
    for (size_t i = 0; i < n; i++)
        p[i] = ln_f32_to_bf16((float)(mu + sigma * tu_normal(r)));
}

static float *widen(const uint16_t *p, size_t n)
{
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = ln_bf16_to_f32(p[i]);
    return f;
}

/* bf16 values in one monotone integer line, so ulp distance is a difference. */
static long ordered(uint16_t h) { return h & 0x8000u ? -(long)(h & 0x7FFFu) : (long)h; }
static long ulp_dist(uint16_t a, uint16_t b) { return labs(ordered(a) - ordered(b)); }

/* One bf16 ulp at v: 8 significant bits, so 2^(e - 7) for v in [2^e, 2^(e+1)). */
static double bf16_ulp(double v)
{
    int e;
    frexp(fabs(v) < 0x1p-126 ? 0x1p-126 : v, &e);
    return ldexp(1.0, e - 8);
}

/* Points checked, and those where the f32 tolerance exceeds half a bf16 ulp (counted and
   reported), with the largest ulp distance seen there and the worst ratio to the bound. */
static long g_points, g_wide_points, g_wide_max_ulp;
static double g_wide_worst;

/*
 * Where the float result is within half a bf16 ulp of the oracle's float (its error
 * bound f32tol says so), rounding both gives the same or adjacent bf16: at most 1 ulp.
 * Elsewhere (f32tol > u/2, u = one bf16 ulp at ref: small outputs whose f32 tolerance is
 * set by their row's scale, not their own size) the float result is within f32tol of
 * ref, its bf16 rounding within u/2 more, and want within u/2 of ref, so
 * |got - want| <= u + f32tol: checked as values (in ulps it is unbounded near zero).
 */
static void check_ulp(uint16_t got, uint16_t want, double f32tol, double ref)
{
    const double u = bf16_ulp(ref);
    const long d = ulp_dist(got, want);
    g_points++;
    if (f32tol > 0.5 * u) {
        const double err = fabs((double)ln_bf16_to_f32(got) - ln_bf16_to_f32(want));
        g_wide_points++;
        g_wide_max_ulp = d > g_wide_max_ulp ? d : g_wide_max_ulp;
        g_wide_worst = fmax(g_wide_worst, err / (u + f32tol));
        if (!(err <= u + f32tol))
            fail_msg("bf16 %#06x vs %#06x: %.3g apart where the f32 tolerance %.3g allows %.3g",
                     got, want, err, f32tol, u + f32tol);
        return;
    }
    assert_true(d <= 1);
    g_max_ulp = d > g_max_ulp ? (int)d : g_max_ulp;
}

static void fwd_k(const uint16_t *x, const float *g, const float *b, uint16_t *y, float *m,
                  float *rs, size_t rows, size_t cols, float eps)
{
    const ln_bf16_fwd_args a = {x, cols, g, b, y, cols, m, rs, cols, eps, 0};
    g_k->bf16_forward(&a, 0, rows);
}

/* Through the same block fold the public entry point uses. */
static void bwd_k(const uint16_t *dy, const uint16_t *x, const float *g, const float *m,
                  const float *rs, uint16_t *dx, float *dg, float *db, size_t rows, size_t cols)
{
    const ln_bf16_bwd_args a = {dy, cols, x, cols, g, m, rs, dx, cols, cols, 0, 0};
    assert_int_equal(ln_bf16_backward_run(g_k, &a, rows, dg, db), LN_OK);
}

/* The f32 oracle (scalar kernel, double inside) on widened inputs. */
static void fwd_oracle(const float *x, const float *g, const float *b, float *y, float *m,
                       float *rs, size_t rows, size_t cols, float eps)
{
    ln_fwd_args a = {0}; /* member by member: later fields of the contract stay zero */
    a.x = x, a.ldx = cols, a.gamma = g, a.beta = b, a.y = y, a.ldy = cols, a.mean = m;
    a.rstd = rs, a.cols = cols, a.eps = eps;
    ln_kernels_get(LN_ISA_SCALAR)->forward(&a, 0, rows);
}

static void bwd_oracle(const float *dy, const float *x, const float *g, const float *m,
                       const float *rs, float *dx, float *dg, float *db, size_t rows, size_t cols)
{
    ln_bwd_args a = {0};
    a.dy = dy, a.lddy = cols, a.x = x, a.ldx = cols, a.gamma = g, a.mean = m, a.rstd = rs;
    a.dx = dx, a.lddx = cols, a.cols = cols;
    assert_int_equal(ln_backward_run(ln_kernels_get(LN_ISA_SCALAR), &a, rows, dg, db), LN_OK);
}

static const size_t k_cols[] = {1,  2,  3,  7,  8,  15,  16,  17,   31,
                                32, 33, 63, 64, 65, 100, 768, 1000, 4097};
static size_t g_ncols = sizeof k_cols / sizeof k_cols[0]; /* LN_TEST_QUICK: 2 fewer */

/* The scalar-path conversion on the awkward bit patterns: ties go to the even neighbour,
   the largest finite float rounds to Inf, NaN stays a quiet NaN, subnormals are kept. */
static void rounding_cases(void **state)
{
    (void)state;
    static const uint32_t in[][2] = {
        {0x3F808000u, 0x3F80u}, {0x3F818000u, 0x3F82u}, {0x3F808001u, 0x3F81u},
        {0x3F807FFFu, 0x3F80u}, {0x7F7FFFFFu, 0x7F80u}, {0xFF7FFFFFu, 0xFF80u},
        {0x7F7F7FFFu, 0x7F7Fu}, {0x00008000u, 0x0000u}, {0x00018000u, 0x0002u},
        {0x80000000u, 0x8000u}, {0x7F800000u, 0x7F80u}, {0x7F800001u, 0x7FC0u},
        {0xFFC12345u, 0xFFC1u}, {0x7FBF0000u, 0x7FFFu},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        float f;
        memcpy(&f, &in[i][0], sizeof f);
        assert_int_equal(ln_f32_to_bf16(f), in[i][1]);
    }
}

/* gamma = 0 makes y = (x - mean) * 0 + beta == beta exactly, so the kernel's vector
   rounding meets ln_f32_to_bf16 on arbitrary bit patterns, bit for bit. */
static void vector_rounding_matches_scalar(void **state)
{
    (void)state;
    tu_rng rng = {7};
    const size_t n = 1000;
    uint16_t *x = calloc(n, 2), *y = calloc(n, 2);
    float *g = calloc(n, sizeof *g), *b = malloc(n * sizeof *b);
    for (int rep = 0; rep < 50; rep++) {
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)tu_next(&rng);
            if (i % 4 == 1)
                u = (u & 0xFFFF0000u) | 0x8000u; /* exact ties */
            if (i % 16 == 3)
                u &= 0x807FFFFFu; /* subnormals */
            if ((u & 0x7FFFFFFFu) == 0)
                u = 0; /* +0: -0 + (+0 * 0) is +0, not a rounding question */
            memcpy(&b[i], &u, sizeof u);
        }
        fwd_k(x, g, b, y, NULL, NULL, 1, n, 1e-5f);
        for (size_t i = 0; i < n; i++) {
            const uint16_t want = ln_f32_to_bf16(b[i]);
            if (isnan(b[i]))
                assert_true((y[i] & 0x7FC0u) == 0x7FC0u && (y[i] & 0x3Fu) == (want & 0x3Fu));
            else
                assert_int_equal(y[i], want);
        }
    }
    free(x), free(y), free(g), free(b);
}

/* Forward against round(f32 oracle on the widened inputs). The scalar kernel computes
   exactly that, so it must match bit for bit. A SIMD kernel's float result is within the
   f32 contract of the oracle's float (NUMERICS: tau (1 + |gamma xhat| + |beta|), tau = 4e-6
   to n = 16384; offset rows add the input-rounding floor 16 2^-24 (1 + mu/sigma) |gamma|),
   and rounding it to bf16 adds at most one bf16 ulp beyond that: where the float error is
   below half an ulp, the result is the same or the adjacent bf16. */
static void forward_matches_oracle(void **state)
{
    (void)state;
    static const double offs[][2] = {{0.0, 1.0}, {0.5, 2.0}, {100.0, 1.0}};
    tu_rng rng = {11};
    for (size_t o = 0; o < 3; o++)
        for (size_t c = 0; c < g_ncols; c++) {
            const size_t n = k_cols[c], rows = 3;
            uint16_t *x = malloc(rows * n * 2), *y = malloc(rows * n * 2);
            float *g = malloc(n * 4), *b = malloc(n * 4), *yr = malloc(rows * n * 4);
            float m[3], rs[3], mr[3], rr[3];
            fill_bf16(&rng, x, rows * n, offs[o][0], offs[o][1]);
            tu_fill_normal(&rng, g, n, 0, 1);
            tu_fill_normal(&rng, b, n, 0, 1);
            float *xf = widen(x, rows * n);
            fwd_oracle(xf, g, b, yr, mr, rr, rows, n, 1e-5f);
            fwd_k(x, g, b, y, m, rs, rows, n, 1e-5f);
            const double floor_in = 16 * TU_EPS32 * (1 + offs[o][0] / offs[o][1]);
            for (size_t r = 0; r < rows; r++) {
                assert_true(fabs(m[r] - mr[r]) <= 4e-6 * (fabs(mr[r]) + 1.0 / rr[r]));
                assert_true(fabs(rs[r] - rr[r]) <= 4e-6 * rr[r] * (1 + offs[o][0] / offs[o][1]));
                for (size_t i = 0; i < n; i++) {
                    const size_t k = r * n + i;
                    const uint16_t want = ln_f32_to_bf16(yr[k]);
                    if (g_k->bf16_forward == ln_bf16_forward_scalar) {
                        assert_int_equal(y[k], want);
                        continue;
                    }
                    const double xhat = (xf[k] - mr[r]) * (double)rr[r];
                    const double f32tol =
                        4e-6 * (1 + fabs(g[i] * xhat) + fabs(b[i])) + floor_in * fabs(g[i]);
                    if (fabs(ln_bf16_to_f32(y[k]) - yr[k]) > bf16_ulp(yr[k]) + f32tol)
                        fail_msg("cols %zu row %zu i %zu: %g vs %g", n, r, i, ln_bf16_to_f32(y[k]),
                                 yr[k]);
                    check_ulp(y[k], want, f32tol, yr[k]);
                }
            }
            free(x), free(y), free(g), free(b), free(yr), free(xf);
        }
}

/* Constant rows give y == beta bit-exactly (centered apply): here round(beta). */
static void constant_rows(void **state)
{
    (void)state;
    static const float vals[] = {0.0f, 1.0f, -3.5f, 40000.0f, 1e30f};
    static const float epss[] = {1e-5f, 1e-6f, 1e-12f};
    tu_rng rng = {5};
    for (size_t c = 0; c < g_ncols; c++) {
        const size_t n = k_cols[c];
        uint16_t *x = malloc(n * 2), *y = malloc(n * 2);
        float *g = malloc(n * 4), *b = malloc(n * 4);
        tu_fill_normal(&rng, g, n, 0, 1);
        tu_fill_normal(&rng, b, n, 0, 1);
        for (size_t v = 0; v < 5; v++)
            for (size_t e = 0; e < 3; e++) {
                for (size_t i = 0; i < n; i++)
                    x[i] = ln_f32_to_bf16(vals[v]);
                fwd_k(x, g, b, y, NULL, NULL, 1, n, epss[e]);
                for (size_t i = 0; i < n; i++)
                    assert_int_equal(y[i], ln_f32_to_bf16(b[i]));
            }
        free(x), free(y), free(g), free(b);
    }
}

/* A NaN or Inf in a row makes that row's outputs NaN; the other rows are bit-identical
   to a run without it (a row never depends on its neighbours). */
static void nan_rows(void **state)
{
    (void)state;
    tu_rng rng = {9};
    static const uint16_t bad[] = {0x7FC0u, 0xFF81u, 0x7F80u, 0xFF80u};
    for (size_t c = 0; c < g_ncols; c++)
        for (size_t v = 0; v < 4; v++) {
            const size_t n = k_cols[c], rows = 3;
            uint16_t *x = malloc(rows * n * 2), *y = malloc(rows * n * 2),
                     *y0 = malloc(rows * n * 2);
            fill_bf16(&rng, x, rows * n, 0, 1);
            fwd_k(x, NULL, NULL, y0, NULL, NULL, rows, n, 1e-5f);
            x[n + (n - 1) / 2] = bad[v];
            fwd_k(x, NULL, NULL, y, NULL, NULL, rows, n, 1e-5f);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(y[i], y0[i]);
                assert_int_equal(y[2 * n + i], y0[2 * n + i]);
                assert_true(isnan(ln_bf16_to_f32(y[n + i])) && (y[n + i] & 0x40u));
            }
            free(x), free(y), free(y0);
        }
}

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int quiet_nan(uint16_t h) { return (h & 0x7FFFu) > 0x7F80u && (h & 0x40u); }

/* NaNs whose low half is all ones in the float operands (gamma, beta, rstd): a rounding
   add that did not treat them as NaN would carry into the sign and store -0 or +0. Their
   columns (forward) or rows (backward) come out as quiet NaN, everything else as in a run
   without them. Enough rows (5) that a kernel skipping the NaN handling for calls with
   finite float operands (kernels/bf16_wrap.h: 4 or more) must notice these. */
static void float_nan_payloads(void **state)
{
    (void)state;
    tu_rng rng = {23};
    for (size_t c = 0; c < g_ncols; c++) {
        const size_t n = k_cols[c], rows = 5, nn = rows * n, jg = n / 2, jb = n - 1;
        uint16_t *x = malloc(nn * 2), *y0 = malloc(nn * 2), *y1 = malloc(nn * 2);
        uint16_t *dx0 = malloc(nn * 2), *dx1 = malloc(nn * 2);
        float *g = malloc(n * 4), *b = malloc(n * 4), m[5], rs[5];
        fill_bf16(&rng, x, nn, 0, 1);
        tu_fill_normal(&rng, g, n, 1, 0.5);
        tu_fill_normal(&rng, b, n, 0, 1);
        fwd_k(x, g, b, y0, m, rs, rows, n, 1e-5f);
        g[jg] = f32_of_bits(0x7FFFFFFFu);
        b[jb] = f32_of_bits(0xFFBFFFFFu); /* signalling */
        fwd_k(x, g, b, y1, NULL, NULL, rows, n, 1e-5f);
        for (size_t i = 0; i < nn; i++) {
            if (i % n == jg || i % n == jb)
                assert_true(quiet_nan(y1[i]));
            else
                assert_int_equal(y1[i], y0[i]);
        }
        g[jg] = 1.0f;
        const ln_bf16_bwd_args a0 = {x, n, x, n, g, m, rs, dx0, n, n, 0, 0};
        g_k->bf16_backward(&a0, 0, rows, NULL, NULL);
        rs[1] = f32_of_bits(0x7FFFFFFFu);
        const ln_bf16_bwd_args a1 = {x, n, x, n, g, m, rs, dx1, n, n, 0, 0};
        g_k->bf16_backward(&a1, 0, rows, NULL, NULL);
        for (size_t i = 0; i < nn; i++) {
            if (i / n == 1)
                assert_true(quiet_nan(dx1[i]));
            else
                assert_int_equal(dx1[i], dx0[i]);
        }
        free(x), free(y0), free(y1), free(dx0), free(dx1), free(g), free(b);
    }
}

/* The size of the terms of dx_i = rstd (g_i - mean(g) - xhat_i mean(g xhat)) in row r:
   float rounding is relative to them, not to dx, which cancels (for cols == 2 exactly:
   its reference is pure rounding noise). */
static double dx_scale(const float *dy, const float *x, const float *g, float m, float rs, size_t n)
{
    double sg = 0, sgx = 0, t = 0;
    for (size_t i = 0; i < n; i++) {
        sg += (double)dy[i] * g[i];
        sgx += (double)dy[i] * g[i] * (x[i] - (double)m) * rs;
    }
    for (size_t i = 0; i < n; i++)
        t = fmax(t, fabs((double)dy[i] * g[i]) + fabs(sg / n) +
                        fabs((x[i] - (double)m) * rs * sgx / n));
    return rs * t;
}

/* Backward against the f32 oracle on widened inputs. Scalar: bit-exact (dx rounded once
   more to bf16; dgamma/dbeta the same double sums). SIMD: dgamma, dbeta within the f32
   contract 1e-5 ||ref||inf; dx within 1e-5 of its terms' size (dx_scale: the same
   contract measured where float rounding happens) plus one bf16 ulp of the reference
   (the final rounding). cols == 1 gives dgamma == +0 and dx == 0 exactly. */
static void backward_matches_oracle(void **state)
{
    (void)state;
    static const size_t rows_list[] = {1, 3, 64, 130};
    tu_rng rng = {13};
    for (size_t ri = 0; ri < 4; ri++)
        for (size_t c = 0; c < g_ncols; c++) {
            const size_t n = k_cols[c], rows = rows_list[ri], nn = rows * n;
            if (nn > 200000)
                continue;
            uint16_t *x = malloc(nn * 2), *dy = malloc(nn * 2), *dx = malloc(nn * 2),
                     *y = malloc(nn * 2);
            float *g = malloc(n * 4), *m = malloc(rows * 4), *rs = malloc(rows * 4);
            float *dg = malloc(n * 4), *db = malloc(n * 4), *dgr = malloc(n * 4),
                  *dbr = malloc(n * 4);
            float *dxr = malloc(nn * 4);
            fill_bf16(&rng, x, nn, 0.5, 2);
            fill_bf16(&rng, dy, nn, 0, 1);
            tu_fill_normal(&rng, g, n, 1, 0.5);
            fwd_k(x, g, NULL, y, m, rs, rows, n, 1e-5f);
            float *xf = widen(x, nn), *dyf = widen(dy, nn);
            bwd_oracle(dyf, xf, g, m, rs, dxr, dgr, dbr, rows, n);
            bwd_k(dy, x, g, m, rs, dx, dg, db, rows, n);
            double ng = 0, nb = 0, sc[130];
            for (size_t r = 0; r < rows; r++)
                sc[r] = dx_scale(dyf + r * n, xf + r * n, g, m[r], rs[r], n);
            for (size_t j = 0; j < n; j++)
                ng = fmax(ng, fabs(dgr[j])), nb = fmax(nb, fabs(dbr[j]));
            const int exact = g_k->bf16_backward == ln_bf16_backward_scalar;
            for (size_t k = 0; k < nn; k++) {
                if (exact)
                    assert_int_equal(dx[k], ln_f32_to_bf16(dxr[k]));
                else if (fabs(ln_bf16_to_f32(dx[k]) - dxr[k]) > bf16_ulp(dxr[k]) + 1e-5 * sc[k / n])
                    fail_msg("dx cols %zu k %zu: %g vs %g", n, k, ln_bf16_to_f32(dx[k]), dxr[k]);
                if (!exact)
                    check_ulp(dx[k], ln_f32_to_bf16(dxr[k]), 1e-5 * sc[k / n], dxr[k]);
            }
            for (size_t j = 0; j < n; j++) /* exact: tolerance 0 */
                assert_true(fabs(dg[j] - dgr[j]) <= (exact ? 0 : 1e-5 * ng) &&
                            fabs(db[j] - dbr[j]) <= (exact ? 0 : 1e-5 * nb));
            if (n == 1)
                for (size_t k = 0; k < nn; k++)
                    assert_true(dg[0] == 0.0f && !signbit(dg[0]) && ln_bf16_to_f32(dx[k]) == 0.0f);
            free(x), free(dy), free(dx), free(y), free(g), free(m), free(rs), free(dg), free(db);
            free(dgr), free(dbr), free(dxr), free(xf), free(dyf);
        }
}

/* y == x and dx == dy give the bits of the out-of-place call; a second run repeats them. */
static void in_place_and_repeatable(void **state)
{
    (void)state;
    tu_rng rng = {17};
    for (size_t c = 0; c < g_ncols; c++) {
        const size_t n = k_cols[c], rows = 2, nn = rows * n;
        uint16_t *x = malloc(nn * 2), *y = malloc(nn * 2), *y2 = malloc(nn * 2),
                 *dy = malloc(nn * 2);
        uint16_t *dx = malloc(nn * 2), *io = malloc(nn * 2);
        float *g = malloc(n * 4), *b = malloc(n * 4), m[2], rs[2], dg[2][4097], db[2][4097];
        fill_bf16(&rng, x, nn, 0, 1);
        fill_bf16(&rng, dy, nn, 0, 1);
        tu_fill_normal(&rng, g, n, 0, 1);
        tu_fill_normal(&rng, b, n, 0, 1);
        fwd_k(x, g, b, y, m, rs, rows, n, 1e-5f);
        fwd_k(x, g, b, y2, m, rs, rows, n, 1e-5f);
        assert_memory_equal(y, y2, nn * 2);
        memcpy(io, x, nn * 2);
        fwd_k(io, g, b, io, NULL, NULL, rows, n, 1e-5f);
        assert_memory_equal(io, y, nn * 2);
        bwd_k(dy, x, g, m, rs, dx, dg[0], db[0], rows, n);
        memcpy(io, dy, nn * 2);
        bwd_k(io, x, g, m, rs, io, dg[1], db[1], rows, n);
        assert_memory_equal(io, dx, nn * 2);
        assert_memory_equal(dg[0], dg[1], n * 4);
        assert_memory_equal(db[0], db[1], n * 4);
        free(x), free(y), free(y2), free(dy), free(dx), free(io), free(g), free(b);
    }
}

/* args.nt (the runner's mark for outputs beyond the cache) makes the forward prefetch the
   rows ahead and the backward prefetch dx, and nothing else: y, mean, rstd, dx and the
   partials keep the bits of nt = 0. 40 rows, so that rows of 64 columns and more have
   rows within reach (4 KiB ahead) to prefetch. */
static void cold_same_bits(void **state)
{
    (void)state;
    tu_rng rng = {23};
    for (size_t c = 0; c < g_ncols; c++) {
        const size_t n = k_cols[c], rows = 40, nn = rows * n;
        uint16_t *x = malloc(nn * 2), *y0 = malloc(nn * 2), *y1 = malloc(nn * 2);
        float *g = malloc(n * 4), *b = malloc(n * 4), m[2][40], rs[2][40];
        fill_bf16(&rng, x, nn, 3, 2);
        tu_fill_normal(&rng, g, n, 0, 1);
        tu_fill_normal(&rng, b, n, 0, 1);
        const ln_bf16_fwd_args a0 = {x, n, g, b, y0, n, m[0], rs[0], n, 1e-5f, 0};
        const ln_bf16_fwd_args a1 = {x, n, g, b, y1, n, m[1], rs[1], n, 1e-5f, 1};
        g_k->bf16_forward(&a0, 0, rows);
        g_k->bf16_forward(&a1, 0, rows);
        assert_memory_equal(y0, y1, nn * 2);
        assert_memory_equal(m[0], m[1], sizeof m[0]);
        assert_memory_equal(rs[0], rs[1], sizeof rs[0]);
        /* The backward of the same rows, y0 as dy, dx into y1 and then a fresh buffer. */
        uint16_t *dx1 = malloc(nn * 2);
        float *pg = malloc(4 * n * 4);
        const ln_bf16_bwd_args b0 = {y0, n, x, n, g, m[0], rs[0], y1, n, n, 0, 0};
        const ln_bf16_bwd_args b1 = {y0, n, x, n, g, m[0], rs[0], dx1, n, n, 1, rows};
        g_k->bf16_backward(&b0, 0, rows, pg, pg + n);
        g_k->bf16_backward(&b1, 0, rows, pg + 2 * n, pg + 3 * n);
        assert_memory_equal(y1, dx1, nn * 2);
        assert_memory_equal(pg, pg + 2 * n, 2 * n * 4);
        free(pg), free(dx1), free(x), free(y0), free(y1), free(g), free(b);
    }
}

/* Streamed outputs (nt = 1) go out as whole lines from the row's first line boundary on,
   with ordinary stores before and after; the groups of the backward stream only when their
   rows share an offset in a line. Every offset of y and dx in a 64-byte line, with a row
   stride that moves each row to another offset and one that keeps them in step, against
   nt = 0: the same bits, and the 64 bytes on each side of the rows untouched. */
static void streamed_every_line_offset(void **state)
{
    (void)state;
    static const size_t cols[] = {16, 47, 64, 100, 131, 768};
    enum { rows = 5, pad = 32 };
    tu_rng rng = {37};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        for (int step = 0; step < 2; step++) {
            const size_t n = cols[c], ld = step ? (n + 31) / 32 * 32 : n + 5;
            const size_t len = rows * ld + 2 * pad, bytes = (len * 2 + 127) / 64 * 64;
            uint16_t *x = malloc(rows * ld * 2), *dy = malloc(rows * ld * 2);
            uint16_t *o[2] = {aligned_alloc(64, bytes), aligned_alloc(64, bytes)};
            float *g = malloc(n * 4), *b = malloc(n * 4), m[rows], rs[rows];
            float *pg = malloc(4 * n * 4);
            assert_true(x && dy && o[0] && o[1] && g && b && pg);
            fill_bf16(&rng, x, rows * ld, 1, 2);
            fill_bf16(&rng, dy, rows * ld, 0, 1);
            tu_fill_normal(&rng, g, n, 0, 1);
            tu_fill_normal(&rng, b, n, 0, 1);
            for (size_t off = 0; off < 32; off++) {
                for (int k = 0; k < 2; k++) { /* y, then dx, at pad + off */
                    memset(o[0], 0xA5, bytes);
                    memset(o[1], 0xA5, bytes);
                    for (unsigned nt = 0; nt < 2; nt++) {
                        uint16_t *out = o[nt] + pad + off;
                        if (k == 0) {
                            const ln_bf16_fwd_args a = {x, ld, g, b, out, ld, m, rs, n, 1e-5f, nt};
                            g_k->bf16_forward(&a, 0, rows);
                        } else {
                            const ln_bf16_bwd_args a = {dy, ld, x, ld, g, m, rs, out, ld, n, nt, rows};
                            g_k->bf16_backward(&a, 0, rows, pg + 2 * n * nt, pg + 2 * n * nt + n);
                        }
                    }
                    assert_memory_equal(o[0], o[1], bytes);
                    for (size_t i = 0; i < pad + off; i++)
                        assert_int_equal(o[0][i], 0xA5A5);
                    for (size_t i = pad + off + (rows - 1) * ld + n; i < bytes / 2; i++)
                        assert_int_equal(o[0][i], 0xA5A5);
                    if (k)
                        assert_memory_equal(pg, pg + 2 * n, 2 * n * 4);
                }
            }
            free(x), free(dy), free(o[0]), free(o[1]), free(g), free(b), free(pg);
        }
}

/* The record of the same ISA that rounds with integer shifts, for a record using the
   ISA's BF16 conversion instruction; NULL for any other record. */
static const ln_kernels *shift_sibling(const ln_kernels *k)
{
    return k && k->plain != k ? k->plain : NULL;
}

/* Equal bits, except that two quiet NaNs match whatever their sign and payload: which
   NaN operand an addition or multiplication passes on depends on the operand order the
   compiler picks for it, which two kernel files need not share (the emulated build shows
   it). Both must still be NaN and quiet, the conversion's part. */
static void assert_bf16_same(const uint16_t *a, const uint16_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const int na = (a[i] & 0x7FFFu) > 0x7F80u, nb = (b[i] & 0x7FFFu) > 0x7F80u;
        if (na && nb && (a[i] & 0x40u) && (b[i] & 0x40u))
            continue;
        assert_int_equal(a[i], b[i]);
    }
}

/* A record using the BF16 conversion instruction (vcvtne2ps2bf16, BFCVTN, BFCVT) against
   the shift-rounding record of its ISA: identical bits, also for NaN (quiet) and for results that
   are float subnormals (which vcvtne2ps2bf16 alone would flush to zero). Runs where the
   CPU has the extension. */
static void native_matches_shift(void **state)
{
    (void)state;
    const ln_kernels *sh = shift_sibling(g_native);
    if (!sh)
        skip();
    tu_rng rng = {31};
    for (size_t c = 0; c < g_ncols; c++) {
        const size_t n = k_cols[c], rows = 3, nn = rows * n;
        uint16_t *x = malloc(nn * 2), *y0 = malloc(nn * 2), *y1 = malloc(nn * 2);
        uint16_t *dx0 = malloc(nn * 2), *dx1 = malloc(nn * 2);
        float *g = malloc(n * 4), *b = malloc(n * 4), m[3], rs[3];
        fill_bf16(&rng, x, nn, 0, 1);
        x[nn / 2] = 0x7FA1u;             /* a signalling NaN in the middle row */
        for (size_t i = 0; i < n; i++) { /* tiny gamma: results around 2^-126 */
            g[i] = (float)ldexp(tu_normal(&rng), -126 - (int)(i % 8));
            b[i] = i % 3 ? 0.0f : 1e-39f;
        }
        const ln_bf16_fwd_args a0 = {x, n, g, b, y0, n, m, rs, n, 1e-5f, 0};
        const ln_bf16_fwd_args a1 = {x, n, g, b, y1, n, m, rs, n, 1e-5f, 0};
        sh->bf16_forward(&a0, 0, rows);
        g_native->bf16_forward(&a1, 0, rows);
        assert_bf16_same(y0, y1, nn);
        const ln_bf16_bwd_args b0 = {x, n, x, n, g, m, rs, dx0, n, n, 0, 0};
        const ln_bf16_bwd_args b1 = {x, n, x, n, g, m, rs, dx1, n, n, 0, 0};
        sh->bf16_backward(&b0, 0, rows, NULL, NULL);
        g_native->bf16_backward(&b1, 0, rows, NULL, NULL);
        assert_bf16_same(dx0, dx1, nn);
        free(x), free(y0), free(y1), free(dx0), free(dx1), free(g), free(b);
    }
}

/* A BF16 extension only ever counts on top of its usable ISA. */
static void cpu_extension_consistent(void **state)
{
    (void)state;
    const unsigned ext = ln_cpu_ext_mask(), isa = ln_cpu_isa_mask();
    if (ext & LN_CPUX_AVX512_BF16)
        assert_true(isa & (1u << LN_ISA_AVX512));
    if (ext & LN_CPUX_NEON_BF16)
        assert_true(isa & (1u << LN_ISA_NEON));
    if (ext & LN_CPUX_SVE_BF16)
        assert_true(isa & (1u << LN_ISA_SVE));
}

/* n bf16 flush against a PROT_NONE page (tu_guard_alloc counts floats). */
static uint16_t *guard_u16(tu_guard *gd, size_t n, int at_end)
{
    uint16_t *p = (uint16_t *)tu_guard_alloc(gd, (n + 1) / 2, at_end);
    return p && at_end && (n & 1) ? p + 1 : p;
}

/* Every operand flush against a guard page, at its end and at its start: a read or write
   outside the rows faults. */
static void guard_pages(void **state)
{
    (void)state;
    tu_rng rng = {19};
    for (int at_end = 0; at_end < 2; at_end++)
        for (size_t c = 0; c < g_ncols; c++) {
            const size_t n = k_cols[c], rows = 2, nn = rows * n;
            tu_guard G[10];
            uint16_t *x = guard_u16(&G[0], nn, at_end), *y = guard_u16(&G[1], nn, at_end);
            uint16_t *dy = guard_u16(&G[2], nn, at_end), *dx = guard_u16(&G[3], nn, at_end);
            float *g = tu_guard_alloc(&G[4], n, at_end), *b = tu_guard_alloc(&G[5], n, at_end);
            float *m = tu_guard_alloc(&G[6], rows, at_end),
                  *rs = tu_guard_alloc(&G[7], rows, at_end);
            float *dg = tu_guard_alloc(&G[8], n, at_end), *db = tu_guard_alloc(&G[9], n, at_end);
            fill_bf16(&rng, x, nn, 0, 1);
            fill_bf16(&rng, dy, nn, 0, 1);
            tu_fill_normal(&rng, g, n, 0, 1);
            tu_fill_normal(&rng, b, n, 0, 1);
            fwd_k(x, g, b, y, m, rs, rows, n, 1e-5f);
            bwd_k(dy, x, g, m, rs, dx, dg, db, rows, n);
            assert_false(isnan(ln_bf16_to_f32(y[nn - 1])) || isnan(ln_bf16_to_f32(dx[0])));
            for (int i = 0; i < 10; i++)
                tu_guard_free(&G[i]);
        }
}

int main(int argc, char **argv)
{
    const int isa = argc > 1 ? tu_isa_from_name(argv[1]) : LN_ISA_SCALAR;
    g_k = ln_kernels_get(isa);
    /* Options after the ISA: "shift" forces the integer-shift rounding record even on a
       CPU with the BF16 conversion; "guard" runs only the guard-page test (emulators may
       mis-fault). */
    g_ncols -= getenv("LN_TEST_QUICK") ? 2 : 0; /* emulation is 200-850x slower */
    int guard = 0, shift = 0;
    for (int i = 2; i < argc; i++) {
        guard |= strcmp(argv[i], "guard") == 0;
        shift |= strcmp(argv[i], "shift") == 0;
    }
    if (!g_k) {
        printf("skip: kernels for %s not compiled in or not runnable here\n",
               argc > 1 ? argv[1] : "?");
        return TU_SKIP;
    }
    g_native = shift_sibling(g_k) ? g_k : NULL; /* the run with "shift" checks it too */
    if (shift && !(g_k = shift_sibling(g_k))) {
        printf("skip: no BF16 conversion instruction here, the shift record is the ISA's own\n");
        return TU_SKIP;
    }
    printf("bf16 kernel: %s%s\n", g_k->name, g_k->plain != g_k ? "bf16" : "");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rounding_cases),
        cmocka_unit_test(vector_rounding_matches_scalar),
        cmocka_unit_test(forward_matches_oracle),
        cmocka_unit_test(constant_rows),
        cmocka_unit_test(nan_rows),
        cmocka_unit_test(float_nan_payloads),
        cmocka_unit_test(backward_matches_oracle),
        cmocka_unit_test(in_place_and_repeatable),
        cmocka_unit_test(cold_same_bits),
        cmocka_unit_test(streamed_every_line_offset),
        cmocka_unit_test(native_matches_shift),
        cmocka_unit_test(cpu_extension_consistent),
    };
    const struct CMUnitTest guard_tests[] = {cmocka_unit_test(guard_pages)};
    const int rc = guard ? cmocka_run_group_tests(guard_tests, NULL, NULL)
                         : cmocka_run_group_tests(tests, NULL, NULL);
    printf("max bf16 ulp distance from round(f32 oracle), where the f32 error < 1/2 bf16 ulp: %d\n",
           g_max_ulp);
    printf("points with f32 tolerance > 1/2 bf16 ulp: %ld of %ld; there max %ld ulp apart, "
           "worst %.3g of the bound u + f32tol\n",
           g_wide_points, g_points, g_wide_max_ulp, g_wide_worst);
    return rc;
}
