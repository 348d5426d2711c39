/* test_kernel_limits.c - one kernel at the edge of its documented range and at every pointer offset. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kcheck.h"
#include "testutil.h"

static const ln_kernels *K;
static const ln_kernels *ORACLE;

/* Lengths around every vector width (4, 8, 16 lanes) and a few real ones. */
static const size_t COLS[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 64, 100, 768, 1601, 4096};
#define NCOLS (sizeof COLS / sizeof *COLS)

/*
 * layernorm.h: finite inputs give finite outputs while every |x_i - mean| is below
 * 1e19 / sqrt(cols) (RMSNorm: mean 0, so |x_i|). Rows of +-a around an offset c, with
 * a = 0.9e19 / sqrt(cols) (an odd row's last value is c, which moves the mean by at most
 * a / cols, so |x_i - mean| <= a (1 + 1/cols) < 1e19 / sqrt(cols)). The float kernels'
 * relative rounding does not depend on the scale as long as nothing overflows, so the
 * NUMERICS.md tau bound against the double oracle must hold here too, plus, with an
 * offset c, the offset-row floor 16 * 2^-24 * |mean| * rstd (the float mean's rounding,
 * seen through rstd and gamma); overflow would show as Inf or NaN, far outside both.
 */
static void fill_range_row(float *x, size_t cols, double c, double sign)
{
    const double a = 0.9e19 / sqrt((double)cols);
    for (size_t i = 0; i < cols; i++)
        x[i] = (float)(c + ((i & 1) ? -a : a) * sign);
    if (cols & 1)
        x[cols - 1] = (float)c;
}

static void check_range(size_t cols, double c, unsigned flags)
{
    const size_t rows = 3, n = rows * cols;
    float *x = kc_alloc(n), *y = kc_alloc(n), *yr = kc_alloc(n), *g = kc_alloc(cols);
    float *b = kc_alloc(cols), m[3], r[3], mr[3], rr[3];
    tu_rng rng = {cols};
    for (size_t row = 0; row < rows; row++)
        fill_range_row(x + row * cols, cols, c, row == 1 ? -1.0 : 1.0);
    tu_fill_normal(&rng, g, cols, 0.0, 1.0);
    tu_fill_normal(&rng, b, cols, 0.0, 1.0);
    const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .beta = b, .y = y, .ldy = cols,
                           .mean = m, .rstd = r, .cols = cols, .eps = 1e-5f, .flags = flags};
    ln_fwd_args ar = a;
    ar.y = yr, ar.mean = mr, ar.rstd = rr;
    K->forward(&a, 0, rows);
    ORACLE->forward(&ar, 0, rows);
    const double tau = kc_tau(cols);
    for (size_t row = 0; row < rows; row++) {
        assert_true(isfinite(m[row]) && isfinite(r[row]) && r[row] > 0);
        for (size_t i = 0; i < cols; i++) {
            const size_t k = row * cols + i;
            const double xhat = ((double)x[k] - mr[row]) * rr[row];
            const double scale = 1.0 + fabs(g[i] * xhat) + fabs(b[i]);
            const double floor = 16 * TU_EPS32 * fabs((double)mr[row]) * rr[row] * fabs(g[i]);
            if (!(fabs((double)y[k] - yr[k]) <= tau * scale + floor))
                fail_msg("cols %zu offset %g flags %u row %zu col %zu: y %g, oracle %g", cols,
                         c, flags, row, i, y[k], yr[k]);
        }
    }
    /* Backward from the oracle's statistics: dx = rstd * O(1), tiny but finite. */
    float *dy = kc_alloc(n), *dx = kc_alloc(n), *dxr = kc_alloc(n);
    float *dg = kc_alloc(cols), *dgr = kc_alloc(cols);
    tu_fill_normal(&rng, dy, n, 0.0, 1.0);
    const ln_bwd_args ba = {.dy = dy, .lddy = cols, .x = x, .ldx = cols, .gamma = g,
                            .mean = mr, .rstd = rr, .dx = dx, .lddx = cols, .cols = cols,
                            .flags = flags};
    ln_bwd_args bar = ba;
    bar.dx = dxr;
    assert_int_equal(ln_backward_run(K, &ba, rows, dg, NULL), LN_OK);
    assert_int_equal(ln_backward_run(ORACLE, &bar, rows, dgr, NULL), LN_OK);
    double ex = 0, sx = 0, eg = 0, sg = 0;
    for (size_t k = 0; k < n; k++) {
        assert_true(isfinite(dx[k]));
        ex = fmax(ex, fabs((double)dx[k] - dxr[k]));
        sx = fmax(sx, fabs(dxr[k]));
    }
    for (size_t i = 0; i < cols; i++) {
        assert_true(isfinite(dg[i]));
        eg = fmax(eg, fabs((double)dg[i] - dgr[i]));
        sg = fmax(sg, fabs(dgr[i]));
    }
    /* The backward contract's bound (cols == 1: both are exactly zero). */
    assert_true(ex <= 1e-5 * sx && eg <= 1e-5 * sg);
    free(x), free(y), free(yr), free(g), free(b), free(dy), free(dx), free(dxr), free(dg);
    free(dgr);
}

static void range_limit_gives_finite_outputs(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCOLS; c++) {
        check_range(COLS[c], 0.0, 0);
        check_range(COLS[c], 3e19, 0); /* |mean| >> spread as well */
        check_range(COLS[c], 0.0, LN_FLAG_RMS_NORM);
    }
}

/*
 * Backward at every pointer offset 0..15 floats (each operand its own): the same bits
 * as 64-byte aligned operands, since the kernels' arithmetic never depends on where a
 * row starts (unaligned loads, masked tails).
 */
static void backward_any_alignment(void **state)
{
    (void)state;
    static const size_t cols_list[] = {5, 17, 100, 768};
    tu_rng rng = {51};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c], rows = 5, n = rows * cols;
        float *base[6], *ref[6];
        const size_t len[6] = {n, n, cols, n, cols, cols}; /* dy x gamma dx dgamma dbeta */
        for (int o = 0; o < 6; o++) {
            base[o] = kc_alloc(len[o] + 16);
            ref[o] = aligned_alloc(64, (len[o] * sizeof(float) + 63) / 64 * 64);
            assert_non_null(ref[o]);
        }
        float m[5], r[5], *y = kc_alloc(n);
        tu_fill_normal(&rng, ref[1], n, 2.0, 3.0);
        tu_fill_normal(&rng, ref[0], n, 0.0, 1.0);
        tu_fill_normal(&rng, ref[2], cols, 0.0, 1.0);
        kc_forward(ORACLE, ref[1], NULL, NULL, y, m, r, rows, cols, 1e-5f);
        kc_backward(K, ref[0], ref[1], ref[2], m, r, ref[3], ref[4], ref[5], rows, cols);
        for (size_t off = 0; off < 16; off++) {
            float *p[6];
            for (int o = 0; o < 6; o++)
                p[o] = base[o] + (off + 3 * (size_t)o) % 16;
            memcpy(p[0], ref[0], n * sizeof(float));
            memcpy(p[1], ref[1], n * sizeof(float));
            memcpy(p[2], ref[2], cols * sizeof(float));
            kc_backward(K, p[0], p[1], p[2], m, r, p[3], p[4], p[5], rows, cols);
            for (int o = 3; o < 6; o++)
                assert_true(kc_same_bits(p[o], ref[o], len[o]));
        }
        for (int o = 0; o < 6; o++)
            free(base[o]), free(ref[o]);
        free(y);
    }
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    ORACLE = ln_kernels_get(LN_ISA_SCALAR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(range_limit_gives_finite_outputs),
        cmocka_unit_test(backward_any_alignment),
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, NULL);
}
