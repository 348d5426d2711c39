/* test_accuracy_backward.c - one kernel's backward held to the accuracy contract on every kind of row. */
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
#include "rowkinds.h"
#include "testutil.h"

/*
 * The contract (NUMERICS.md): dx per row within 1e-6 of the row's largest true |dx|, dgamma
 * and dbeta within 1e-6 of the vector's largest column sum of |terms| (sum over rows of
 * |dy xhat|, of |dy|), the scale any float sum is accurate to. Truth: long double from the
 * same float x, dy, gamma, the saved float rstd (backward's input; eps is not, so the
 * kernel cannot recover rstd's rounding, which is the forward's contract) and the row's
 * exact mean (the kernel recovers the saved mean's rounding from the row).
 *
 * Why 1e-6 = 16.8 u (u = 2^-24) is room enough, per kernel: each element of dx takes
 * g = dy gamma, x - mean (exact on the offset rows: x within a factor 2 of mean), xhat's
 * multiply-add and dx's two multiply-adds, at most 5u of the terms |rstd g| + |kb xhat| +
 * |kc|, which for data without systematic cancellation stay within a few times max|dx|;
 * the row sums (sum g, sum g (x - mean), sum (x - mean)) enter dx divided by n, so their
 * float chains (at most n/W additions, random rounding) add far less. dgamma/dbeta add a
 * block's rows (<= 64) in float, terms of 3u each, rounding like a random walk: about
 * sqrt(64) u relative to the sum of the terms' magnitudes. Not to the sum's own size:
 * where the terms cancel, each term's own rounding (xhat's, the product's) already exceeds
 * 1e-6 of the result -- three rows of 1601 columns with a first value 1e4 have terms
 * dy xhat ~ +-60 in that column summing to 0.57, which the kernels got within 0.4 u of
 * the terms and 4.8e-6 of the sum (only a double pass, the scalar kernel's, does better).
 * Where every term is 0 (dgamma of constant rows) the kernel must give 0 exactly.
 */
#define BOUND 1e-6

static const ln_kernels *K, *ORACLE;
/* per kind, then the rescue rows, then the alternating rows: dx, dgamma, dbeta */
static double worst[TU_ROW_NKINDS + 2][3];

/* max|got - t| / max scale (scale: |t| itself, or a sum's |terms| when given); where the
   scale is all 0, 0 if got equals t, else Inf. NaN gives NaN. */
static double rel_err_to(const float *got, const long double *t, const long double *scale,
                         size_t n, size_t stride)
{
    long double emax = 0, tmax = 0;
    for (size_t i = 0; i < n; i++) {
        const long double e = fabsl((long double)got[i * stride] - t[i]);
        const long double s = scale ? scale[i] : fabsl(t[i]);
        if (isnan((double)e))
            return NAN;
        emax = e > emax ? e : emax;
        tmax = s > tmax ? s : tmax;
    }
    return tmax > 0 ? (double)(emax / tmax) : (emax == 0 ? 0 : INFINITY);
}

static double rel_err(const float *got, const long double *t, size_t n, size_t stride)
{
    return rel_err_to(got, t, NULL, n, stride);
}

static const char *slot_name(int slot)
{
    return slot < TU_ROW_NKINDS ? tu_row_kind_name(slot)
                                : slot == TU_ROW_NKINDS ? "rescue3e37" : "alternate1e4";
}

static void note(int slot, int which, double e, size_t cols, unsigned flags)
{
    if (!(e <= worst[slot][which]))
        worst[slot][which] = e;
    if (!(e <= BOUND))
        fail_msg("%s, %zu cols, %s: %s error %.3g > %g", slot_name(slot), cols,
                 flags & LN_FLAG_RMS_NORM ? "RMSNorm" : "LayerNorm",
                 which == 0 ? "dx" : which == 1 ? "dgamma" : "dbeta", e, BOUND);
}

/* rows x cols of x (filled by the caller), dy ~ N(0, dys), gamma ~ N(0, 1); statistics from
   the oracle's forward; the kernel's dx, dgamma, dbeta against the truth. With `acc` the
   kernel adds to a dx holding N(0, 1) times the row's scale, and the truth adds it too:
   the bound then also allows the final addition's rounding, u |dx0 + t|. */
static void check(int slot, const float *x, size_t rows, size_t cols, unsigned flags,
                  double dys, int acc, tu_rng *rng)
{
    const size_t n = rows * cols;
    const int centered = !(flags & LN_FLAG_RMS_NORM);
    float *dy = kc_alloc(n), *g = kc_alloc(cols), *y = kc_alloc(n), *m = kc_alloc(rows);
    float *rs = kc_alloc(rows), *dx = kc_alloc(n), *dg = kc_alloc(cols), *db = kc_alloc(cols);
    long double *t = malloc((n + 4 * cols) * sizeof *t), *tg = t + n, *tb = tg + cols;
    long double *sg = tb + cols, *sb = sg + cols; /* sums of the terms' magnitudes */
    assert_non_null(t);
    tu_fill_normal(rng, dy, n, 0.0, dys);
    tu_fill_normal(rng, g, cols, 0.0, 1.0);
    const ln_fwd_args fa = {.x = x, .ldx = cols, .gamma = g, .y = y, .ldy = cols, .mean = m,
                            .rstd = rs, .cols = cols, .eps = 1e-5f, .flags = flags};
    ln_forward_run(ORACLE, &fa, rows);
    for (size_t j = 0; j < cols; j++)
        tg[j] = tb[j] = sg[j] = sb[j] = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        tu_ref_backward_row(dyr, xr, g, centered, rs[r], cols, t + r * cols);
        const long double mu = centered ? tu_ref_mean(xr, cols) : 0.0L;
        for (size_t j = 0; j < cols; j++) {
            const long double term = (long double)dyr[j] * (((long double)xr[j] - mu) * rs[r]);
            tg[j] += term;
            tb[j] += dyr[j];
            sg[j] += fabsl(term);
            sb[j] += fabsl((long double)dyr[j]);
        }
    }
    float *dx0 = NULL;
    if (acc) {
        dx0 = kc_alloc(n);
        for (size_t r = 0; r < rows; r++) {
            long double tmax = 0;
            for (size_t j = 0; j < cols; j++)
                tmax = fmaxl(tmax, fabsl(t[r * cols + j]));
            tu_fill_normal(rng, dx0 + r * cols, cols, 0.0, (double)tmax);
        }
        memcpy(dx, dx0, n * sizeof *dx);
        memset(dg, 0, cols * sizeof *dg); /* accumulated into as well: from 0 here */
        memset(db, 0, cols * sizeof *db);
    }
    const ln_bwd_args a = {.dy = dy, .lddy = cols, .x = x, .ldx = cols, .gamma = g, .mean = m,
                           .rstd = rs, .dx = dx, .lddx = cols, .cols = cols,
                           .flags = flags | (acc ? LN_FLAG_ACCUMULATE : 0u)};
    assert_int_equal(ln_backward_run(K, &a, rows, dg, db), LN_OK);
    for (size_t r = 0; r < rows; r++) {
        if (acc) { /* err - u |dx0 + t| against max|t| */
            long double emax = 0, tmax = 0;
            for (size_t j = 0; j < cols; j++) {
                const size_t k = r * cols + j;
                const long double s = (long double)dx0[k] + t[k];
                const long double e = fabsl(dx[k] - s) - TU_EPS32 * fabsl(s);
                emax = e > emax || isnan((double)e) ? e : emax;
                tmax = fmaxl(tmax, fabsl(t[k]));
            }
            note(slot, 0, tmax > 0 ? (double)(emax / tmax) : (double)emax, cols, flags);
        } else {
            note(slot, 0, rel_err(dx + r * cols, t + r * cols, cols, 1), cols, flags);
        }
    }
    note(slot, 1, rel_err_to(dg, tg, sg, cols, 1), cols, flags);
    note(slot, 2, rel_err_to(db, tb, sb, cols, 1), cols, flags);
    free(dy), free(g), free(y), free(m), free(rs), free(dx), free(dg), free(db), free(t);
    free(dx0);
}

static const size_t k_cols[] = {1,   2,   3,    5,    7,    8,    15,   16,   17,    31,   33,
                                64,  100, 127,  128,  255,  256,  513,  768,  1024,  1025,
                                1601, 4096, 4097, 16384, 65536};

/* Rows of one kind, several per call (interleaved groups, a group tail and the partials
   over rows), LayerNorm and RMSNorm, plain and accumulating. */
static void every_row_kind(void **state)
{
    (void)state;
    tu_rng rng = {21};
    for (size_t c = 0; c < sizeof k_cols / sizeof *k_cols; c++) {
        const size_t cols = k_cols[c], rows = cols >= 16384 ? 2 : cols >= 1024 ? 3 : 7;
        if (kc_quick() && cols > 4097)
            continue;
        float *x = kc_alloc(rows * cols);
        for (int kind = 0; kind < TU_ROW_NKINDS; kind++) {
            for (size_t r = 0; r < rows; r++)
                tu_fill_row_kind(&rng, x + r * cols, cols, kind);
            for (unsigned f = 0; f < 2; f++) {
                check(kind, x, rows, cols, f ? LN_FLAG_RMS_NORM : 0u, 1.0, 0, &rng);
                check(kind, x, rows, cols, f ? LN_FLAG_RMS_NORM : 0u, 1.0, 1, &rng);
            }
        }
        free(x);
    }
}

/* Finite rows beyond the float path's range: x ~ N(0, 3e37) with dy ~ N(0, 1e3), so
   sum(dy gamma (x - mean)) overflows float while every true output is an ordinary float.
   The kernel must notice and redo the row (kernels/ln_backward.h). */
static void rows_beyond_the_float_path(void **state)
{
    (void)state;
    tu_rng rng = {22};
    static const size_t cols_list[] = {17, 100, 768, 1601};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c], rows = 5;
        float *x = kc_alloc(rows * cols);
        tu_fill_normal(&rng, x, rows * cols, 0.0, 3e37);
        for (unsigned f = 0; f < 2; f++)
            check(TU_ROW_NKINDS, x, rows, cols, f ? LN_FLAG_RMS_NORM : 0u, 1e3, 0, &rng);
        free(x);
    }
}

/* Rows of +-1e4 alternating (a little noise on top): the mean (~0.15) is far below the
   spread, so the saved mean's rounding is nothing next to x - mean, but every lane of a
   vector sees values of one sign, and a lane's float sum of x - mean grows to 1e4 times
   its count. Recovering the mean from that sum moved the centre by 1.3e-5 sigma at 65535
   columns (dgamma 1.3e-5, dx 2.9e-4 on AVX2 and AVX-512), which kernels/plan.h's
   ln_mean_fix bounds. The independent audit of 2026-12-07 found it; its rows are these. */
static void rows_alternating_far_values(void **state)
{
    (void)state;
    tu_rng rng = {23};
    static const size_t cols_list[] = {17, 1000, 4099, 65535};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c], rows = 2;
        if (kc_quick() && cols > 4099)
            continue;
        float *x = kc_alloc(rows * cols);
        for (size_t r = 0; r < rows; r++) {
            tu_fill_normal(&rng, x + r * cols, cols, 0.0, r ? 1e-3 : 0.0);
            for (size_t i = 0; i < cols; i++)
                x[r * cols + i] += i % 2 ? -1e4f : 1e4f;
        }
        for (int acc = 0; acc < 2; acc++)
            check(TU_ROW_NKINDS + 1, x, rows, cols, 0u, 1.0, acc, &rng);
        free(x);
    }
}

static int report(void **state)
{
    (void)state;
    printf("[ %-8s ] worst error (dx per row relative to the largest true |dx|, dgamma / "
           "dbeta to the largest column sum of |terms|), LayerNorm and RMSNorm:\n", K->name);
    for (int k = 0; k <= TU_ROW_NKINDS + 1; k++)
        printf("[ %-8s ]   %-13s %9.3g %9.3g %9.3g\n", K->name,
               slot_name(k), worst[k][0],
               worst[k][1], worst[k][2]);
    return 0;
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    ORACLE = ln_kernels_get(LN_ISA_SCALAR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_kind),
        cmocka_unit_test(rows_beyond_the_float_path),
        cmocka_unit_test(rows_alternating_far_values),
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, report);
}
