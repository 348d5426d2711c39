/* test_kernel_strided_flags.c - one kernel's RMSNorm, accumulation, strides and fused add vs the oracle. */
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

static const size_t COLS[] = {1, 3, 8, 16, 17, 64, 100, 255, 768, 1601, 4096};
#define NCOLS (sizeof COLS / sizeof *COLS)

/* Forward through a kernel with every knob: strides, flags, residual and sum. */
static void fwd(const ln_kernels *k, const float *x, size_t ldx, const float *res, float *sum,
                const float *g, const float *b, float *y, size_t ldy, float *m, float *r,
                size_t rows, size_t cols, unsigned flags)
{
    const ln_fwd_args a = {.x = x, .ldx = ldx, .gamma = g, .beta = b, .y = y, .ldy = ldy,
                           .mean = m, .rstd = r, .cols = cols, .eps = 1e-5f, .flags = flags,
                           .residual = res, .sum = sum};
    k->forward(&a, 0, rows);
}

static int bwd(const ln_kernels *k, const float *dy, size_t ld, const float *x, const float *g,
               const float *m, const float *r, float *dx, float *dg, float *db, size_t rows,
               size_t cols, unsigned flags)
{
    const ln_bwd_args a = {.dy = dy, .lddy = ld, .x = x, .ldx = ld, .gamma = g, .mean = m,
                           .rstd = r, .dx = dx, .lddx = ld, .cols = cols, .flags = flags};
    return ln_backward_run(k, &a, rows, dg, db);
}

/* RMSNorm: y = x rstd gamma + beta, rstd = 1/sqrt(mean(x^2) + eps). Long-double reference;
   the same tau bound as LayerNorm, with xhat = x rstd as the scale of the product term. */
static void rms_forward(void **state)
{
    (void)state;
    tu_rng rng = {41};
    for (size_t c = 0; c < NCOLS; c++) {
        const size_t cols = COLS[c], rows = 3, n = rows * cols;
        float *x = kc_alloc(n), *g = kc_alloc(cols), *b = kc_alloc(cols), *y = kc_alloc(n);
        float m[3], r[3];
        tu_fill_normal(&rng, x, n, 0.5, 2.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        tu_fill_normal(&rng, b, cols, 0.0, 1.0);
        fwd(K, x, cols, NULL, NULL, g, b, y, cols, m, r, rows, cols, LN_FLAG_RMS_NORM);
        for (size_t row = 0; row < rows; row++) {
            long double ms = 0;
            for (size_t i = 0; i < cols; i++)
                ms += (long double)x[row * cols + i] * x[row * cols + i];
            const long double rs = 1.0L / sqrtl(ms / cols + 1e-5L);
            assert_true(m[row] == 0.0f);
            assert_true(fabsl(r[row] / rs - 1) <= kc_tau(cols));
            for (size_t i = 0; i < cols; i++) {
                const long double xhat = x[row * cols + i] * rs;
                const long double ref = xhat * g[i] + b[i];
                assert_true(fabsl(y[row * cols + i] - ref) <=
                            kc_tau(cols) * (1 + fabsl(g[i] * xhat) + fabsl((long double)b[i])));
            }
        }
        free(x), free(g), free(b), free(y);
    }
}

/* RMSNorm backward against the oracle with the contract's backward bound; mean unread. */
static void rms_backward(void **state)
{
    (void)state;
    tu_rng rng = {42};
    for (size_t c = 0; c < NCOLS; c++) {
        const size_t cols = COLS[c], rows = 70, n = rows * cols;
        float *x = kc_alloc(n), *dy = kc_alloc(n), *g = kc_alloc(cols), *y = kc_alloc(n);
        float *dx = kc_alloc(n), *rdx = kc_alloc(n), *dg = kc_alloc(cols), *rdg = kc_alloc(cols);
        float *db = kc_alloc(cols), *rdb = kc_alloc(cols), *r = kc_alloc(rows);
        tu_fill_normal(&rng, x, n, 0.5, 2.0);
        tu_fill_normal(&rng, dy, n, 0.0, 1.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        fwd(ORACLE, x, cols, NULL, NULL, g, NULL, y, cols, NULL, r, rows, cols, LN_FLAG_RMS_NORM);
        assert_int_equal(bwd(K, dy, cols, x, g, NULL, r, dx, dg, db, rows, cols, LN_FLAG_RMS_NORM), 0);
        assert_int_equal(bwd(ORACLE, dy, cols, x, g, NULL, r, rdx, rdg, rdb, rows, cols, LN_FLAG_RMS_NORM), 0);
        const float *got[] = {dx, dg, db}, *ref[] = {rdx, rdg, rdb};
        const size_t len[] = {n, cols, cols};
        for (int o = 0; o < 3; o++) {
            double err = 0, scale = 0;
            for (size_t i = 0; i < len[o]; i++) {
                err = fmax(err, fabs((double)got[o][i] - ref[o][i]));
                scale = fmax(scale, fabs(ref[o][i]));
            }
            assert_true(err <= 1e-5 * scale);
        }
        free(x), free(dy), free(g), free(y), free(dx), free(rdx), free(dg), free(rdg);
        free(db), free(rdb), free(r);
    }
}

/* Accumulate adds to what is there. A path that adds the rounded fresh value in float
   errs by u |old + fresh| (u = 2^-24); one that adds the unrounded value v and rounds
   once (the scalar dx, the dgamma/dbeta fold) differs from old + fresh by at most
   u |old + v| + u |v|. Both are within u (|old| + 2 |fresh|) to first order. */
static void accumulate_adds(void **state)
{
    (void)state;
    tu_rng rng = {43};
    static const unsigned flag_sets[] = {0, LN_FLAG_RMS_NORM};
    for (size_t c = 0; c < NCOLS; c++)
        for (int f = 0; f < 2; f++) {
            const size_t cols = COLS[c], rows = 67, n = rows * cols;
            float *x = kc_alloc(n), *dy = kc_alloc(n), *y = kc_alloc(n), *m = kc_alloc(rows);
            float *r = kc_alloc(rows), *fresh[3], *acc[3], *old[3];
            const size_t len[3] = {n, cols, cols};
            for (int o = 0; o < 3; o++) {
                fresh[o] = kc_alloc(len[o]), acc[o] = kc_alloc(len[o]), old[o] = kc_alloc(len[o]);
                tu_fill_normal(&rng, old[o], len[o], 0.0, 3.0);
                memcpy(acc[o], old[o], len[o] * sizeof(float));
            }
            tu_fill_normal(&rng, x, n, 1.0, 2.0);
            tu_fill_normal(&rng, dy, n, 0.0, 1.0);
            fwd(ORACLE, x, cols, NULL, NULL, NULL, NULL, y, cols, m, r, rows, cols, flag_sets[f]);
            bwd(K, dy, cols, x, NULL, m, r, fresh[0], fresh[1], fresh[2], rows, cols, flag_sets[f]);
            bwd(K, dy, cols, x, NULL, m, r, acc[0], acc[1], acc[2], rows, cols,
                flag_sets[f] | LN_FLAG_ACCUMULATE);
            for (int o = 0; o < 3; o++)
                for (size_t i = 0; i < len[o]; i++) {
                    const double want = (double)old[o][i] + fresh[o][i];
                    assert_true(fabs(acc[o][i] - want) <=
                                TU_EPS32 * (fabs(old[o][i]) + 2.0001 * fabs(fresh[o][i])));
                }
            /* dx == dy in place with accumulation: dx = dy + dx_fresh. */
            memcpy(acc[0], dy, n * sizeof(float));
            bwd(K, acc[0], cols, x, NULL, m, r, acc[0], NULL, NULL, rows, cols,
                flag_sets[f] | LN_FLAG_ACCUMULATE);
            for (size_t i = 0; i < n; i++)
                assert_true(fabs(acc[0][i] - ((double)dy[i] + fresh[0][i])) <=
                            TU_EPS32 * (fabs(dy[i]) + 2.0001 * fabs(fresh[0][i])));
            for (int o = 0; o < 3; o++)
                free(fresh[o]), free(acc[o]), free(old[o]);
            free(x), free(dy), free(y), free(m), free(r);
        }
}

/* A call of one block with args.acc_dg/acc_db (run.c, LN_FLAG_ACCUMULATE): each kernel
   adds its partials to the caller's values itself, in the loop of its last group of rows
   or after it. The caller's values must become part + old in float, part being the
   kernel's own partials from the same call without the fold, and dx must not change: for
   every group shape (rows 1..7 end in groups of 4, 2 and 1), dgamma or dbeta alone, dx
   absent (no fold in the loop), a cold call (nt: the loops with prefetch hints), and a
   last row beyond the float path's range (|x| 1e30, dy 1e10: its group is redone in
   double, then folded). */
static void accumulate_folds_in_kernel(void **state)
{
    (void)state;
    tu_rng rng = {48};
    static const size_t cols_list[] = {3, 17, 100, 768, 1601, 8193};
    static const size_t rows_list[] = {1, 2, 3, 5, 7};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++)
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
            for (unsigned v = 0; v < 2 * 2 * 3 * 2 * 2; v++) {
                const unsigned rms = v % 2, nt = v / 2 % 2, ops = v / 4 % 3; /* ops: both, dg, db */
                const int no_dx = v / 12 % 2, huge = v / 24 % 2;
                const size_t cols = cols_list[c], rows = rows_list[ri], n = rows * cols;
                float *x = kc_alloc(n), *dy = kc_alloc(n), *y = kc_alloc(n), *g = kc_alloc(cols);
                float *dx0 = kc_alloc(n), *dx1 = kc_alloc(n), m[7], r[7], *pg = kc_alloc(cols);
                float *pb = kc_alloc(cols), *sg = kc_alloc(cols), *sb = kc_alloc(cols);
                float *old = kc_alloc(2 * cols), *acc = kc_alloc(2 * cols);
                tu_fill_normal(&rng, x, n, 0.5, 2.0);
                tu_fill_normal(&rng, dy, n, 0.0, 1.0);
                tu_fill_normal(&rng, g, cols, 1.0, 0.3);
                tu_fill_normal(&rng, dx0, n, 0.0, 1.0);
                tu_fill_normal(&rng, old, 2 * cols, 0.0, 3.0);
                if (huge)
                    for (size_t i = (rows - 1) * cols; i < n; i++)
                        x[i] *= 1e30f, dy[i] *= 1e10f;
                memcpy(dx1, dx0, n * sizeof(float));
                memcpy(acc, old, 2 * cols * sizeof(float));
                fwd(ORACLE, x, cols, NULL, NULL, g, NULL, y, cols, m, r, rows, cols,
                    rms ? LN_FLAG_RMS_NORM : 0);
                ln_bwd_args a = {.dy = dy, .lddy = cols, .x = x, .ldx = cols, .gamma = g,
                                 .mean = m, .rstd = r, .dx = no_dx ? NULL : dx0, .lddx = cols,
                                 .cols = cols, .nt = nt, .pf_rows = rows,
                                 .flags = LN_FLAG_ACCUMULATE | (rms ? LN_FLAG_RMS_NORM : 0)};
                float *dg = ops != 2 ? pg : NULL, *db = ops != 1 ? pb : NULL;
                K->backward(&a, 0, rows, dg, db);
                a.dx = no_dx ? NULL : dx1;
                a.acc_dg = dg ? acc : NULL;
                a.acc_db = db ? acc + cols : NULL;
                K->backward(&a, 0, rows, dg ? sg : NULL, db ? sb : NULL);
                for (size_t j = 0; j < cols; j++) {
                    const float wg = dg ? pg[j] + old[j] : old[j];
                    const float wb = db ? pb[j] + old[cols + j] : old[cols + j];
                    if (!kc_same_bits(acc + j, &wg, 1) || !kc_same_bits(acc + cols + j, &wb, 1))
                        fail_msg("cols %zu rows %zu variant %u: column %zu not part + old",
                                 cols, rows, v, j);
                }
                assert_true(kc_same_bits(dx0, dx1, n));
                free(x), free(dy), free(y), free(g), free(dx0), free(dx1), free(pg), free(pb);
                free(sg), free(sb), free(old), free(acc);
            }
}

/* Strides cols, cols + 1 and 2 cols + 7, each flag set: the contiguous bits exactly. */
static void strides_give_contiguous_bits(void **state)
{
    (void)state;
    tu_rng rng = {44};
    for (size_t c = 0; c < NCOLS; c++)
        for (unsigned flags = 0; flags <= LN_FLAG_RMS_NORM; flags++) {
            const size_t cols = COLS[c], rows = 5, n = rows * cols;
            const size_t lds[] = {cols, cols + 1, 2 * cols + 7};
            float *x = kc_alloc(n), *y = kc_alloc(n), *dy = kc_alloc(n), *dx = kc_alloc(n);
            float *g = kc_alloc(cols), m[5], r[5], dg[4096], dg2[4096];
            tu_fill_normal(&rng, x, n, 0.2, 1.0);
            tu_fill_normal(&rng, dy, n, 0.0, 1.0);
            tu_fill_normal(&rng, g, cols, 1.0, 0.3);
            fwd(K, x, cols, NULL, NULL, g, NULL, y, cols, m, r, rows, cols, flags);
            bwd(K, dy, cols, x, g, m, r, dx, dg, NULL, rows, cols, flags);
            for (int s = 0; s < 3; s++) {
                const size_t ld = lds[s];
                float *sx = kc_alloc(rows * ld), *sy = kc_alloc(rows * ld);
                float *sdy = kc_alloc(rows * ld), *sdx = kc_alloc(rows * ld);
                for (size_t row = 0; row < rows; row++) {
                    memcpy(sx + row * ld, x + row * cols, cols * sizeof(float));
                    memcpy(sdy + row * ld, dy + row * cols, cols * sizeof(float));
                }
                fwd(K, sx, ld, NULL, NULL, g, NULL, sy, ld, NULL, NULL, rows, cols, flags);
                bwd(K, sdy, ld, sx, g, m, r, sdx, dg2, NULL, rows, cols, flags);
                for (size_t row = 0; row < rows; row++) {
                    assert_true(kc_same_bits(sy + row * ld, y + row * cols, cols));
                    assert_true(kc_same_bits(sdx + row * ld, dx + row * cols, cols));
                }
                assert_true(kc_same_bits(dg, dg2, cols));
                free(sx), free(sy), free(sdy), free(sdx);
            }
            free(x), free(y), free(dy), free(dx), free(g);
        }
}

/* Fused add: sum is x + residual rounded once (as the test computes it), and y, mean,
   rstd are exactly the kernel's forward of that sum; in place on residual and on x too. */
static void fused_add_is_add_then_forward(void **state)
{
    (void)state;
    tu_rng rng = {45};
    for (size_t c = 0; c < NCOLS; c++)
        for (unsigned flags = 0; flags <= LN_FLAG_RMS_NORM; flags++) {
            const size_t cols = COLS[c], rows = 4, n = rows * cols;
            float *x = kc_alloc(n), *res = kc_alloc(n), *s = kc_alloc(n), *want = kc_alloc(n);
            float *sum = kc_alloc(n), *y = kc_alloc(n), *g = kc_alloc(cols), *b = kc_alloc(cols);
            float m[4], r[4], wm[4], wr[4];
            tu_fill_normal(&rng, x, n, 0.0, 1.0);
            tu_fill_normal(&rng, res, n, 3.0, 5.0);
            tu_fill_normal(&rng, g, cols, 1.0, 0.3);
            tu_fill_normal(&rng, b, cols, 0.0, 0.3);
            for (size_t i = 0; i < n; i++)
                s[i] = x[i] + res[i];
            fwd(K, s, cols, NULL, NULL, g, b, want, cols, wm, wr, rows, cols, flags);
            fwd(K, x, cols, res, sum, g, b, y, cols, m, r, rows, cols, flags);
            assert_true(kc_same_bits(sum, s, n) && kc_same_bits(y, want, n));
            assert_true(kc_same_bits(m, wm, rows) && kc_same_bits(r, wr, rows));
            fwd(K, x, cols, res, NULL, g, b, y, cols, NULL, NULL, rows, cols, flags);
            assert_true(kc_same_bits(y, want, n));
            memcpy(sum, res, n * sizeof(float)); /* sum == residual: the residual stream */
            fwd(K, x, cols, sum, sum, g, b, y, cols, NULL, NULL, rows, cols, flags);
            assert_true(kc_same_bits(sum, s, n) && kc_same_bits(y, want, n));
            memcpy(y, x, n * sizeof(float)); /* y == x */
            fwd(K, y, cols, res, NULL, g, b, y, cols, NULL, NULL, rows, cols, flags);
            assert_true(kc_same_bits(y, want, n));
            free(x), free(res), free(s), free(want), free(sum), free(y), free(g), free(b);
        }
}

/* The new operands and the last strided row flush against PROT_NONE pages. */
static void guard_pages(void **state)
{
    (void)state;
    tu_rng rng = {46};
    const size_t max_cols = kc_quick() ? 24 : 48;
    for (size_t cols = 1; cols <= max_cols; cols++)
        for (int at_end = 0; at_end < 2; at_end++) {
            const size_t rows = 3, ld = cols + 5, span = (rows - 1) * ld + cols;
            tu_guard gx, gr, gs, gy, gdy, gdx, gdg;
            float *x = tu_guard_alloc(&gx, span, at_end), *res = tu_guard_alloc(&gr, span, at_end);
            float *sum = tu_guard_alloc(&gs, span, at_end), *y = tu_guard_alloc(&gy, span, at_end);
            float *dy = tu_guard_alloc(&gdy, span, at_end), *dx = tu_guard_alloc(&gdx, span, at_end);
            float *dg = tu_guard_alloc(&gdg, cols, at_end), m[3], r[3];
            tu_fill_normal(&rng, x, span, 0.0, 1.0);
            tu_fill_normal(&rng, res, span, 0.0, 1.0);
            tu_fill_normal(&rng, dy, span, 0.0, 1.0);
            memset(dx, 0, span * sizeof(float));
            memset(dg, 0, cols * sizeof(float));
            for (unsigned flags = 0; flags <= LN_FLAG_RMS_NORM; flags++) {
                fwd(K, x, ld, res, sum, NULL, NULL, y, ld, m, r, rows, cols, flags);
                bwd(K, dy, ld, x, NULL, m, r, dx, dg, NULL, rows, cols,
                    flags | LN_FLAG_ACCUMULATE);
            }
            tu_guard_free(&gx), tu_guard_free(&gr), tu_guard_free(&gs), tu_guard_free(&gy);
            tu_guard_free(&gdy), tu_guard_free(&gdx), tu_guard_free(&gdg);
        }
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    ORACLE = ln_kernels_get(LN_ISA_SCALAR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rms_forward),
        cmocka_unit_test(rms_backward),
        cmocka_unit_test(accumulate_adds),
        cmocka_unit_test(accumulate_folds_in_kernel),
        cmocka_unit_test(strides_give_contiguous_bits),
        cmocka_unit_test(fused_add_is_add_then_forward),
        cmocka_unit_test(guard_pages),
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, NULL);
}
