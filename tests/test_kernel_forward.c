/* test_kernel_forward.c - one kernel's forward against the scalar oracle (NUMERICS.md). */
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

static const ln_kernels *K; /* the kernel under test */
static const ln_kernels *ORACLE;

/* Worst error seen per case, in units of its bound's scale, printed for the notes. */
static double worst_random, worst_offset, worst_burn;

/*
 * One row set with random N(0,1) data at pointer offsets 0..15 floats. A SIMD kernel is
 * checked against the oracle: |y - y_ref| <= tau (1 + |gamma xhat_ref| + |beta|); the mean
 * error, in units of std, and rstd's relative error obey the same tau, since xhat
 * inherits both. The scalar kernel IS the oracle, so it is checked against the
 * independent long-double two-pass instead, at its own bound: it computes in double and
 * rounds y, mean and rstd to float once, so each is within 2^-24 of the truth relative to
 * its size (|y| <= the scale above), plus its double roundings: sums of n <= 65536 values
 * below ~5 sigma err by less than n 2^-53 5 sigma < 2^-34 sigma, so y, rstd gain 2^-34
 * relative and the mean 2^-34 sigma.
 */
static void check_random(size_t rows, size_t cols, tu_rng *rng)
{
    const size_t n = rows * cols, ox = cols % 16, oy = (cols + 5) % 16;
    const size_t og = (cols + 9) % 16, ob = (cols + 13) % 16;
    float *xb = kc_alloc(n + 16), *yb = kc_alloc(n + 16), *gb = kc_alloc(cols + 16);
    float *bb = kc_alloc(cols + 16), *yr = kc_alloc(n), *m = kc_alloc(rows);
    float *r = kc_alloc(rows), *mr = kc_alloc(rows), *rr = kc_alloc(rows);
    float *x = xb + ox, *y = yb + oy, *g = gb + og, *b = bb + ob;
    tu_fill_normal(rng, x, n, 0.0, 1.0);
    tu_fill_normal(rng, g, cols, 0.0, 1.0);
    tu_fill_normal(rng, b, cols, 0.0, 1.0);
    kc_forward(K, x, g, b, y, m, r, rows, cols, 1e-5f);
    kc_forward(ORACLE, x, g, b, yr, mr, rr, rows, cols, 1e-5f);
    const int truth = K == ORACLE; /* scalar: the long-double reference, not itself */
    const double tau = truth ? TU_EPS32 + 0x1p-34 : kc_tau(cols);
    long double *ref = malloc(cols * sizeof *ref);
    assert_non_null(ref);
    for (size_t row = 0; row < rows; row++) {
        long double lm, lr;
        tu_ref_stats(x + row * cols, cols, 1e-5f, &lm, &lr);
        tu_ref_forward_row(x + row * cols, g, b, cols, 1e-5f, ref);
        for (size_t i = 0; i < cols; i++) {
            const size_t k = row * cols + i;
            const double xhat = (double)(((long double)x[k] - lm) * lr);
            const double scale = 1.0 + fabs(g[i] * xhat) + fabs(b[i]);
            const double want = truth ? (double)ref[i] : yr[k];
            const double err = fabs((double)y[k] - want) / scale;
            if (err > worst_random)
                worst_random = err;
            if (!(err <= tau))
                fail_msg("cols %zu row %zu col %zu: y %.9g, %s %.9g", cols, row, i, y[k],
                         truth ? "truth" : "oracle", want);
        }
        if (truth) { /* mean, rstd against the long-double values themselves */
            assert_true(fabsl(m[row] - lm) <= TU_EPS32 * fabsl(lm) + 0x1p-34L / lr);
            assert_true(fabsl(r[row] / lr - 1.0L) <= tau);
            continue;
        }
        assert_true(fabs((double)m[row] - mr[row]) * rr[row] <=
                    tau * (1.0 + fabs(mr[row]) * rr[row]));
        assert_true(fabs((double)r[row] / rr[row] - 1.0) <= tau);
    }
    free(ref);
    free(xb), free(yb), free(gb), free(bb), free(yr), free(m), free(r), free(mr), free(rr);
}

static void random_rows_every_small_cols(void **state)
{
    (void)state;
    tu_rng rng = {1};
    for (size_t cols = 1; cols <= 300; cols++)
        check_random(1 + cols % 9, cols, &rng); /* rows 1..9 */
    check_random(300, 64, &rng);
    check_random(257, 100, &rng);
    check_random(200, 256, &rng);
}

static void random_rows_large_cols(void **state)
{
    (void)state;
    static const size_t cols_list[] = {511,  512,  513,  767,  768,  1000, 1023,  1024,  1280,
                                       1600, 1601, 2048, 4095, 4096, 8192, 12288, 16384, 65536};
    tu_rng rng = {2};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        if (kc_quick() && cols_list[c] > 4096)
            continue;
        check_random(cols_list[c] <= 2048 ? 5 : 2, cols_list[c], &rng);
    }
    check_random(kc_quick() ? 20 : 300, 768, &rng);
}

/* NULL gamma means ones and NULL beta zeros: the same values as explicit ones/zeros
   (compared by value, so an fma's +0 against a product's -0 does not count). */
static void null_gamma_beta_are_ones_and_zeros(void **state)
{
    (void)state;
    tu_rng rng = {3};
    static const size_t cols_list[] = {1, 7, 16, 33, 100, 768, 1601};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c], rows = 3, n = rows * cols;
        float *x = kc_alloc(n), *ones = kc_alloc(cols), *zeros = kc_alloc(cols);
        float *g = kc_alloc(cols), *b = kc_alloc(cols), *y1 = kc_alloc(n), *y2 = kc_alloc(n);
        tu_fill_normal(&rng, x, n, 0.3, 2.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        tu_fill_normal(&rng, b, cols, 0.0, 1.0);
        for (size_t i = 0; i < cols; i++)
            ones[i] = 1.0f, zeros[i] = 0.0f;
        const float *gs[] = {NULL, g}, *bs[] = {NULL, b};
        for (int gi = 0; gi < 2; gi++)
            for (int bi = 0; bi < 2; bi++) {
                kc_forward(K, x, gs[gi], bs[bi], y1, NULL, NULL, rows, cols, 1e-5f);
                kc_forward(K, x, gi ? g : ones, bi ? b : zeros, y2, NULL, NULL, rows, cols, 1e-5f);
                for (size_t i = 0; i < n; i++)
                    assert_true(y1[i] == y2[i]);
            }
        free(x), free(ones), free(zeros), free(g), free(b), free(y1), free(y2);
    }
}

/* x = mu + N(0, sigma^2), mu/sigma in {1e2, 1e3, 1e4}: rounding the inputs alone moves
   xhat by ~2^-24 mu/sigma, so the contract is |xhat - xhat_ref| <= 16 * 2^-24 (1 + mu/sigma). */
static void offset_rows(void **state)
{
    (void)state;
    static const double ratios[] = {1e2, 1e3, 1e4};
    static const size_t cols_list[] = {4, 16, 100, 768, 4096};
    tu_rng rng = {4};
    for (size_t q = 0; q < 3; q++)
        for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
            const size_t cols = cols_list[c], rows = 4, n = rows * cols;
            float *x = kc_alloc(n), *y = kc_alloc(n);
            long double *ref = malloc(cols * sizeof *ref);
            const double sigma = 0.01 + tu_uniform(&rng);
            tu_fill_normal(&rng, x, n, ratios[q] * sigma, sigma);
            kc_forward(K, x, NULL, NULL, y, NULL, NULL, rows, cols, 1e-5f);
            for (size_t row = 0; row < rows; row++) {
                /* The row's own mean/std: a few samples' spread differs from sigma. */
                long double lm, lr;
                tu_ref_stats(x + row * cols, cols, 1e-5f, &lm, &lr);
                const double bound = 16 * TU_EPS32 * (1 + (double)(fabsl(lm) * lr));
                tu_ref_forward_row(x + row * cols, NULL, NULL, cols, 1e-5f, ref);
                for (size_t i = 0; i < cols; i++) {
                    const double err = fabs((double)(y[row * cols + i] - ref[i]));
                    if (err / bound > worst_offset)
                        worst_offset = err / bound;
                    assert_true(err <= bound);
                }
            }
            free(x), free(y), free(ref);
        }
}

/*
 * burn #5607: 16 values around 100 spaced 1e-3, where E[x^2] - E[x]^2 erred by 1.03.
 * The bound comes from each kernel's error analysis for this row (n = 16, m ~ 100,
 * sigma ~ 4.6e-3, so |m| rstd ~ 2.2e4). y = (x - mean_f) rstd_f: x - mean_f is exact
 * (Sterbenz: both in [50, 200]); rstd_f and the product add a few roundings relative to
 * |xhat|, at most 8 2^-24 (1 + |xhat|). What dominates is the error e_m of the float
 * mean the apply subtracts, which moves every xhat by e_m rstd; e_m <= c_m 2^-24 |m|:
 *   scalar  c_m = 0: the mean stays in double (error ~16 2^-53 |m|), y is rounded once.
 *   x86     c_m = 1: Welford runs on x - x_0 (|x - x_0| <= 0.015: its roundings are
 *           2^-24 * 0.015, negligible), and mean = x_0 + m_s is rounded to float once.
 *   Arm     c_m = 6: Welford on the unshifted x. With n = 16 each lane's first step is
 *           exact (m = x) and no lane takes a second value; each Chan merge of two lanes
 *           keeps the larger inherited error and adds one rounding (<= 2^-24 |m|), and at
 *           most log2(16) = 4 merges combine data (a merge with an empty lane is exact);
 *           1 more for the final horizontal step and 1 of margin.
 * So |y - t| <= c_m 2^-24 |m| rstd + 8 2^-24 (1 + max|xhat|): ~1.3e-3 on x86, ~8e-3 on
 * Arm, ~2e-6 for scalar (where the second term is all there is). The float floor would be
 * a few 2^-24 (NUMERICS.md); the SIMD kernels' float mean is what keeps them above it.
 */
static void burn_5607_row(void **state)
{
    (void)state;
    float x[16], y[16];
    long double ref[16], lm, lr;
    for (int i = 0; i < 16; i++)
        x[i] = (float)(100.0 + (i - 7.5) * 1e-3);
    kc_forward(K, x, NULL, NULL, y, NULL, NULL, 1, 16, 1e-5f);
    tu_ref_forward_row(x, NULL, NULL, 16, 1e-5f, ref);
    tu_ref_stats(x, 16, 1e-5f, &lm, &lr);
    const double c_m = K->isa == LN_ISA_SCALAR                                ? 0
                       : K->isa == LN_ISA_AVX2 || K->isa == LN_ISA_AVX512 ? 1
                                                                              : 6;
    double xhat_max = 0;
    for (int i = 0; i < 16; i++)
        xhat_max = fmax(xhat_max, fabs((double)ref[i]));
    const double bound = c_m * TU_EPS32 * (double)(fabsl(lm) * lr) + 8 * TU_EPS32 * (1 + xhat_max);
    for (int i = 0; i < 16; i++) {
        const double err = fabs((double)(y[i] - ref[i]));
        if (err / bound > worst_burn)
            worst_burn = err / bound;
        if (!(err <= bound))
            fail_msg("burn #5607 row, i %d: error %.3g, bound %.3g", i, err, bound);
    }
}

/* ONNX Runtime #21935/#28463 (NaN for [40000..40003]) and PyTorch #51102 (variance 48425
   instead of ~1 for randn(5,4) + 2000): exact inputs, so the offset bound applies. */
static void onnx_and_pytorch_offset_rows(void **state)
{
    (void)state;
    const float ort[4] = {40000, 40001, 40002, 40003};
    float x[20], y[20], rstd[5];
    long double ref[4];
    kc_forward(K, ort, NULL, NULL, y, NULL, rstd, 1, 4, 1e-5f);
    tu_ref_forward_row(ort, NULL, NULL, 4, 1e-5f, ref);
    for (int i = 0; i < 4; i++)
        assert_true(fabs((double)(y[i] - ref[i])) <= 16 * TU_EPS32 * (1 + 40001.5 / 1.118));
    tu_rng rng = {5};
    tu_fill_normal(&rng, x, 20, 2000.0, 1.0);
    kc_forward(K, x, NULL, NULL, y, NULL, rstd, 5, 4, 1e-5f);
    for (int r = 0; r < 5; r++) {
        long double m, rs;
        tu_ref_stats(x + 4 * r, 4, 1e-5f, &m, &rs);
        tu_ref_forward_row(x + 4 * r, NULL, NULL, 4, 1e-5f, ref);
        /* rstd^-2 is the variance: relative error within the same input-rounding floor. */
        const double bound = 16 * TU_EPS32 * (1 + (double)(fabsl(m) * rs));
        assert_true(fabs((double)(rstd[r] / rs) - 1.0) <= bound);
        for (int i = 0; i < 4; i++)
            assert_true(fabs((double)(y[4 * r + i] - ref[i])) <= bound);
    }
}

/* A constant row has xhat == 0 exactly, so y == beta bit for bit and mean == the value. */
static void constant_rows_give_beta(void **state)
{
    (void)state;
    static const float values[] = {0.0f, 1.0f, -3.5f, 1e30f, -1e-30f, 40000.0f, 1e-40f};
    static const float epss[] = {1e-5f, 1e-6f, 1e-12f};
    static const size_t cols_list[] = {1, 3, 16, 17, 768, 1601};
    tu_rng rng = {6};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c], rows = 2, n = rows * cols;
        float *x = kc_alloc(n), *y = kc_alloc(n), *g = kc_alloc(cols), *b = kc_alloc(cols);
        float m[2];
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        for (size_t i = 0; i < cols; i++)
            b[i] = (float)(0.5 + tu_uniform(&rng)); /* nonzero: no signed-zero ambiguity */
        for (size_t v = 0; v < sizeof values / sizeof *values; v++)
            for (size_t e = 0; e < 3; e++) {
                for (size_t i = 0; i < n; i++)
                    x[i] = values[v];
                kc_forward(K, x, g, b, y, m, NULL, rows, cols, epss[e]);
                for (size_t r = 0; r < rows; r++) {
                    assert_true(kc_same_bits(y + r * cols, b, cols));
                    assert_true(m[r] == values[v]);
                }
            }
        free(x), free(y), free(g), free(b);
    }
}

/* A NaN or +-Inf anywhere in a row makes all of that row's y NaN, LayerNorm and RMSNorm
   (whose Inf once gave rstd = 0 and the rest of the row beta); other rows are bitwise
   what they are without the bad rows. */
static void nan_and_inf_rows_are_contained(void **state)
{
    (void)state;
    static const size_t cols_list[] = {1, 5, 17, 64, 1000};
    tu_rng rng = {7};
    for (size_t c = 0; c < 2 * sizeof cols_list / sizeof *cols_list; c++) {
        const size_t cols = cols_list[c / 2], rows = 6, n = rows * cols;
        float *x = kc_alloc(n), *clean = kc_alloc(n), *y = kc_alloc(n), *g = kc_alloc(cols);
        tu_fill_normal(&rng, x, n, 0.0, 1.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .y = clean, .ldy = cols,
                         .cols = cols, .eps = 1e-5f, .flags = c % 2 ? LN_FLAG_RMS_NORM : 0u};
        K->forward(&a, 0, rows);
        x[1 * cols + cols / 2] = NAN;
        x[3 * cols + cols - 1] = INFINITY;
        x[4 * cols] = -INFINITY;
        a.y = y;
        K->forward(&a, 0, rows);
        for (size_t r = 0; r < rows; r++) {
            if (r == 1 || r == 3 || r == 4)
                for (size_t i = 0; i < cols; i++)
                    assert_true(isnan(y[r * cols + i]));
            else
                assert_true(kc_same_bits(y + r * cols, clean + r * cols, cols));
        }
        free(x), free(clean), free(y), free(g);
    }
}

/* Calls splitting 13 rows into pieces of every size a kernel groups rows by (3, 1, 2, 7 =
   one group of 4 and the 3 after it): threads hand kernels such pieces. */
static const size_t PIECES[] = {0, 3, 4, 6, 13};
static const size_t SHAPE_COLS[] = {1, 2, 3, 5, 8, 15, 16, 17, 31, 64, 100, 256, 768, 1601};
enum { SHAPE_ROWS = 13, SHAPE_NC = sizeof SHAPE_COLS / sizeof *SHAPE_COLS };

/* Same inputs: the same bits every time, in place or not, whatever rows share a call and
   whatever the row strides (threads split rows arbitrarily; strided views are rows too). */
static void bits_independent_of_call_shape(void **state)
{
    (void)state;
    const size_t *cols_list = SHAPE_COLS;
    tu_rng rng = {8};
    for (size_t c = 0; c < SHAPE_NC; c++) {
        const size_t cols = cols_list[c], rows = SHAPE_ROWS, n = rows * cols, ld = cols + 3;
        float *x = kc_alloc(n), *g = kc_alloc(cols), *b = kc_alloc(cols), *y1 = kc_alloc(n);
        float *y2 = kc_alloc(n), *xs = kc_alloc(rows * ld), *ys = kc_alloc(rows * (ld + 4));
        float m1[13], r1[13], m2[13], r2[13];
        tu_fill_normal(&rng, x, n, 1.0, 3.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        tu_fill_normal(&rng, b, cols, 0.0, 1.0);
        kc_forward(K, x, g, b, y1, m1, r1, rows, cols, 1e-5f);
        kc_forward(K, x, g, b, y2, m2, r2, rows, cols, 1e-5f); /* run after run */
        assert_true(kc_same_bits(y1, y2, n) && kc_same_bits(m1, m2, rows) &&
                    kc_same_bits(r1, r2, rows));
        const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .beta = b, .y = y2, .ldy = cols,
                               .mean = m2, .rstd = r2, .cols = cols, .eps = 1e-5f};
        for (size_t r = 0; r < rows; r++) /* one row per call */
            K->forward(&a, r, r + 1);
        assert_true(kc_same_bits(y1, y2, n) && kc_same_bits(m1, m2, rows) &&
                    kc_same_bits(r1, r2, rows));
        memset(y2, 0, n * sizeof *y2);
        for (size_t i = 0; i + 1 < sizeof PIECES / sizeof *PIECES; i++) /* uneven groups */
            K->forward(&a, PIECES[i], PIECES[i + 1]);
        assert_true(kc_same_bits(y1, y2, n) && kc_same_bits(m1, m2, rows) &&
                    kc_same_bits(r1, r2, rows));
        for (size_t r = 0; r < rows; r++)
            memcpy(xs + r * ld, x + r * cols, cols * sizeof *x);
        const ln_fwd_args s = {.x = xs, .ldx = ld, .gamma = g, .beta = b, .y = ys, .ldy = ld + 4,
                               .cols = cols, .eps = 1e-5f};
        K->forward(&s, 0, rows);
        for (size_t r = 0; r < rows; r++)
            assert_true(kc_same_bits(ys + r * (ld + 4), y1 + r * cols, cols));
        memcpy(y2, x, n * sizeof *x); /* in place: y == x */
        kc_forward(K, y2, g, b, y2, NULL, NULL, rows, cols, 1e-5f);
        assert_true(kc_same_bits(y1, y2, n));
        free(x), free(g), free(b), free(y1), free(y2), free(xs), free(ys);
    }
}

/* RMSNorm and the fused add (either norm): a whole call, then the same rows in PIECES,
   give the same y, mean, rstd and sum. */
static void modes_independent_of_call_shape(void **state)
{
    (void)state;
    tu_rng rng = {9};
    for (size_t c = 0; c < SHAPE_NC; c++) {
        const size_t cols = SHAPE_COLS[c], rows = SHAPE_ROWS, n = rows * cols;
        float *x = kc_alloc(n), *res = kc_alloc(n), *g = kc_alloc(cols), *b = kc_alloc(cols);
        float *y[2] = {kc_alloc(n), kc_alloc(n)}, *sum[2] = {kc_alloc(n), kc_alloc(n)};
        float mean[2][SHAPE_ROWS], rstd[2][SHAPE_ROWS];
        tu_fill_normal(&rng, x, n, 1.0, 3.0);
        tu_fill_normal(&rng, res, n, -2.0, 1.0);
        tu_fill_normal(&rng, g, cols, 0.0, 1.0);
        tu_fill_normal(&rng, b, cols, 0.0, 1.0);
        for (unsigned mode = 1; mode < 4; mode++) /* bit 0 RMSNorm, bit 1 fused add */
            for (int k = 0; k < 2; k++) {
                memset(y[k], 0, n * sizeof(float));
                const int add = (mode & 2) != 0;
                const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .beta = b, .y = y[k],
                                       .ldy = cols, .mean = mean[k], .rstd = rstd[k],
                                       .cols = cols, .eps = 1e-5f,
                                       .flags = (mode & 1) ? LN_FLAG_RMS_NORM : 0u,
                                       .residual = add ? res : NULL, .sum = add ? sum[k] : NULL};
                if (k == 0)
                    K->forward(&a, 0, rows);
                else
                    for (size_t i = 0; i + 1 < sizeof PIECES / sizeof *PIECES; i++)
                        K->forward(&a, PIECES[i], PIECES[i + 1]);
                if (k == 1) {
                    assert_true(kc_same_bits(y[0], y[1], n));
                    assert_true(kc_same_bits(rstd[0], rstd[1], rows));
                    if (!(mode & 1))
                        assert_true(kc_same_bits(mean[0], mean[1], rows));
                    if (add)
                        assert_true(kc_same_bits(sum[0], sum[1], n));
                }
            }
        free(x), free(res), free(g), free(b), free(y[0]), free(y[1]), free(sum[0]), free(sum[1]);
    }
}

/* One call of rows x cols, mode 0 LayerNorm / 1 RMSNorm, into y. */
static void forward_mode(const float *x, const float *g, const float *b, float *y, size_t rows,
                         size_t cols, unsigned mode)
{
    const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = g, .beta = b, .y = y, .ldy = cols,
                           .cols = cols, .eps = 1e-5f, .flags = mode ? LN_FLAG_RMS_NORM : 0u};
    K->forward(&a, 0, rows);
}

/* A kernel keeps the plan of the cols it last saw (per thread): whatever call came before,
   a call gives the bits it gives right after a call of other cols. The shapes below share
   cols but not the accumulator count (AVX-512: LayerNorm rows of 513-2048 columns run
   LN_KSMALL accumulators, RMSNorm's LN_KBIG), or full vectors but not the tail (97, 100 on
   16 lanes), so a plan reused on a partial match gives other bits or garbage. */
static void bits_independent_of_previous_calls(void **state)
{
    (void)state;
    static const size_t cols_list[] = {97, 100, 1000, 1601};
    enum { NC = sizeof cols_list / sizeof *cols_list, ROWS = 3, MAXC = 1601 };
    tu_rng rng = {11};
    float *x = kc_alloc(ROWS * MAXC), *g = kc_alloc(MAXC), *b = kc_alloc(MAXC);
    float *ref = kc_alloc(NC * 2 * ROWS * MAXC), *y = kc_alloc(ROWS * MAXC), other;
    tu_fill_normal(&rng, x, ROWS * MAXC, 1.0, 3.0);
    tu_fill_normal(&rng, g, MAXC, 0.0, 1.0);
    tu_fill_normal(&rng, b, MAXC, 0.0, 1.0);
    for (size_t c = 0; c < NC; c++)
        for (unsigned mode = 0; mode < 2; mode++) {
            forward_mode(x, g, b, &other, 1, 1, 0); /* a fresh plan for the call below */
            forward_mode(x, g, b, ref + (c * 2 + mode) * ROWS * MAXC, ROWS, cols_list[c], mode);
        }
    /* Every shape after every other shape (and after itself). */
    for (size_t i = 0; i < NC * 2; i++)
        for (size_t j = 0; j < NC * 2; j++) {
            const size_t ci = i / 2, cj = j / 2;
            forward_mode(x, g, b, y, ROWS, cols_list[ci], i % 2);
            forward_mode(x, g, b, y, ROWS, cols_list[cj], j % 2);
            assert_true(kc_same_bits(y, ref + j * ROWS * MAXC, ROWS * cols_list[cj]));
        }
    free(x), free(g), free(b), free(ref), free(y);
}

static int report(void **state)
{
    (void)state;
    printf("[ %-8s ] forward worst: random %.3g (x tau-scale), offset %.3g (x bound), "
           "burn#5607 %.3g (x bound)\n",
           K->name, worst_random, worst_offset, worst_burn);
    return 0;
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    ORACLE = ln_kernels_get(LN_ISA_SCALAR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_rows_every_small_cols),
        cmocka_unit_test(random_rows_large_cols),
        cmocka_unit_test(null_gamma_beta_are_ones_and_zeros),
        cmocka_unit_test(offset_rows),
        cmocka_unit_test(burn_5607_row),
        cmocka_unit_test(onnx_and_pytorch_offset_rows),
        cmocka_unit_test(constant_rows_give_beta),
        cmocka_unit_test(nan_and_inf_rows_are_contained),
        cmocka_unit_test(bits_independent_of_call_shape),
        cmocka_unit_test(modes_independent_of_call_shape),
        cmocka_unit_test(bits_independent_of_previous_calls),
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, report);
}
