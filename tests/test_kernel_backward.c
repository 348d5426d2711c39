/* test_kernel_backward.c - one kernel's backward against a long-double reference (NUMERICS.md). */
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
static double worst_dx, worst_dg, worst_db; /* in units of their bounds (check_dx, check_param) */
static double worst_dx_rel;                  /* max|err| / max|ref| of a row of dx */

typedef struct problem {
    size_t rows, cols;
    float *x, *dy, *g, *mean, *rstd;
} problem;

/* x = offset + N(0,1) and dy, gamma ~ N(0,1); mean/rstd come from the oracle's forward,
   as they would from a forward pass: both kernels see the same saved statistics. */
static problem make(size_t rows, size_t cols, double offset, tu_rng *rng)
{
    problem p = {rows,           cols,           kc_alloc(rows * cols), kc_alloc(rows * cols),
                 kc_alloc(cols), kc_alloc(rows), kc_alloc(rows)};
    tu_fill_normal(rng, p.x, rows * cols, offset, 1.0);
    tu_fill_normal(rng, p.dy, rows * cols, 0.0, 1.0);
    tu_fill_normal(rng, p.g, cols, 0.0, 1.0);
    float *y = kc_alloc(rows * cols);
    kc_forward(ORACLE, p.x, NULL, NULL, y, p.mean, p.rstd, rows, cols, 1e-5f);
    free(y);
    return p;
}

static void drop(problem *p) { free(p->x), free(p->dy), free(p->g), free(p->mean), free(p->rstd); }

/*
 * Bounds per element at its own row's (dx) or column's (dgamma, dbeta) scale, against the
 * long-double reference computed from the saved float rstd and the row's exact mean
 * (testutil: the kernels correct the saved mean's rounding from the row), derived from
 * how the kernels round. u = 2^-24.
 *
 * dx_i = rstd (g_i - mean(g) - xhat_i mean(g xhat)), g = dy gamma, xhat = (x - mean) rstd.
 * A SIMD kernel works in float: g_i, xhat_i (x - mean, times rstd) and the two products and
 * differences of dx_i round a few times, at most 4u relative to the terms |g_i|, |mean(g)|,
 * |xhat_i mean(g xhat)|; its row sums run in lanes of at least 4 (128-bit vectors) and a
 * reduction tree, so no sum has a chain of more than c = n/4 + log2(n) + 8 additions (the
 * 8: tails, accumulator merges, the product rounding of each term), costing at most
 * gamma_c = c u / (1 - c u) of mean|g| and |xhat_i| mean|g xhat|; the store rounds dx_i
 * (u |dx_i|). The scalar kernel computes in double: only the store (u |dx_i|) and double
 * roundings ((n + 8) 2^-53 of the same terms) remain.
 *
 * dgamma_j = sum over rows of dy xhat, dbeta_j = sum of dy. Every kernel sums a block of at
 * most LN_BWD_BLOCK rows into a float partial and folds the partials in double: a SIMD
 * kernel's partial has a chain of <= LN_BWD_BLOCK additions of terms carrying 3u each
 * (xhat's two roundings, the product), i.e. (LN_BWD_BLOCK + 3) u of S_j = sum |term|, and
 * the fold adds the final rounding u |t_j| <= u S_j; the scalar kernel sums each block in
 * double, so it rounds each partial and the result once: 2u S_j (+2^-40 for the double).
 * Both center on mean + delta, delta = sum(x - mean) / n from the row (the saved mean's
 * rounding): a SIMD kernel's float sum has a chain of c additions as above, so delta is
 * off by gamma_c mean|x - mean| and each xhat of row r by A_r = rstd gamma_c mean|x - mean|,
 * which adds sum_r |dy_rj| A_r to dgamma_j's bound (the scalar kernel's double sum: far
 * below its 2^-40).
 *
 * Each check returns the worst err / bound seen (NaN never passes).
 */
typedef struct worst {
    double bound;   /* err / bound: must stay <= 1 */
    double row_rel; /* dx: max|err| / max|ref| per row (NUMERICS.md's measure) */
} worst;

static worst check_dx(const problem *p, const float *dx)
{
    const size_t n = p->cols;
    const int scalar = K->isa == LN_ISA_SCALAR;
    const double c = (double)(n / 4) + ceil(log2((double)n)) + 8;
    const double gam = scalar ? (n + 8) * 0x1p-53 : c * TU_EPS32 / (1 - c * TU_EPS32);
    const double own = scalar ? 0 : 4 * TU_EPS32;
    long double *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    worst w = {0, 0};
    for (size_t r = 0; r < p->rows; r++) {
        const float *dy = p->dy + r * n, *x = p->x + r * n;
        const double rs = p->rstd[r];
        const double mu = (double)tu_ref_mean(x, n);
        tu_ref_backward_row(dy, x, p->g, 1, p->rstd[r], n, ref);
        double mg = 0, mgx = 0, ag = 0, agx = 0, emax = 0, tmax = 0;
        for (size_t i = 0; i < n; i++) {
            const double g = (double)dy[i] * p->g[i], xh = ((double)x[i] - mu) * rs;
            mg += g / n, mgx += g * xh / n, ag += fabs(g) / n, agx += fabs(g * xh) / n;
        }
        for (size_t i = 0; i < n; i++) {
            const double g = (double)dy[i] * p->g[i], xh = ((double)x[i] - mu) * rs;
            const double t = (double)ref[i], err = fabs((double)dx[r * n + i] - t);
            const double bound = TU_EPS32 * fabs(t) +
                                 rs * (own * (fabs(g) + fabs(mg) + fabs(xh * mgx)) +
                                       gam * (fabs(g) + ag + fabs(xh) * agx));
            const double q = err / bound;
            w.bound = q > w.bound || isnan(q) ? q : w.bound;
            emax = fmax(emax, err), tmax = fmax(tmax, fabs(t));
        }
        if (tmax > 0 && emax / tmax > w.row_rel)
            w.row_rel = emax / tmax;
    }
    free(ref);
    return w;
}

/* dgamma (xhat != 0) or dbeta (xhat == 0: the terms are dy) against the long-double sums. */
static double check_param(const problem *p, const float *got, int gamma_grad)
{
    const size_t n = p->cols;
    const double k = K->isa == LN_ISA_SCALAR ? 2 * TU_EPS32 + 0x1p-40
                                             : (LN_BWD_BLOCK + 4) * TU_EPS32;
    double worst_q = 0;
    const double c = (double)(n / 4) + ceil(log2((double)n)) + 8;
    const double gam = K->isa == LN_ISA_SCALAR ? 0 : c * TU_EPS32 / (1 - c * TU_EPS32);
    long double *mu = malloc(2 * p->rows * sizeof *mu), *ar = mu + p->rows;
    assert_non_null(mu);
    for (size_t r = 0; r < p->rows; r++) {
        mu[r] = tu_ref_mean(p->x + r * n, n);
        long double sd = 0;
        for (size_t i = 0; i < n; i++)
            sd += fabsl((long double)p->x[r * n + i] - p->mean[r]);
        ar[r] = gamma_grad ? p->rstd[r] * gam * sd / n : 0;
    }
    for (size_t j = 0; j < n; j++) {
        long double t = 0, sabs = 0, sdel = 0;
        for (size_t r = 0; r < p->rows; r++) {
            const long double dy = p->dy[r * n + j];
            const long double term =
                gamma_grad ? dy * (((long double)p->x[r * n + j] - mu[r]) * p->rstd[r]) : dy;
            t += term, sabs += fabsl(term), sdel += fabsl(dy) * ar[r];
        }
        const double err = fabs((double)((long double)got[j] - t));
        const double bound = k * (double)sabs + (double)sdel;
        /* A zero sum of zero terms (cols == 1: xhat == 0) must be exactly zero. */
        const double q = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
        worst_q = q > worst_q || isnan(q) ? q : worst_q;
    }
    free(mu);
    return worst_q;
}

static void check_shape(size_t rows, size_t cols, double offset, tu_rng *rng)
{
    problem p = make(rows, cols, offset, rng);
    const size_t n = rows * cols;
    float *dx = kc_alloc(n), *dg = kc_alloc(cols), *db = kc_alloc(cols);
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, db, rows, cols);
    const worst ex = check_dx(&p, dx);
    const double eg = check_param(&p, dg, 1), eb = check_param(&p, db, 0);
    worst_dx = ex.bound > worst_dx ? ex.bound : worst_dx;
    worst_dx_rel = ex.row_rel > worst_dx_rel ? ex.row_rel : worst_dx_rel;
    worst_dg = eg > worst_dg ? eg : worst_dg;
    worst_db = eb > worst_db ? eb : worst_db;
    if (!(ex.bound <= 1 && eg <= 1 && eb <= 1))
        fail_msg("%zu x %zu offset %g: dx %.3g, dgamma %.3g, dbeta %.3g of the bound", rows, cols,
                 offset, ex.bound, eg, eb);
    free(dx), free(dg), free(db);
    drop(&p);
}

static void random_shapes(void **state)
{
    (void)state;
    tu_rng rng = {11};
    for (size_t cols = 1; cols <= 80; cols++)
        check_shape(1 + cols % 9, cols, 0.0, &rng);
    static const size_t shapes[][2] = {{65, 64},  {130, 768}, {64, 1601}, {300, 100},
                                       {7, 4095}, {2, 16384}, {2, 65536}, {1024, 8192}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        if (kc_quick() && shapes[s][0] * shapes[s][1] > 100000)
            continue;
        check_shape(shapes[s][0], shapes[s][1], 0.0, &rng);
    }
}

/* mu/sigma = 1e3: the centered form keeps dx, dgamma within the same bound. */
static void offset_rows(void **state)
{
    (void)state;
    tu_rng rng = {12};
    check_shape(70, 768, 1e3, &rng);
    check_shape(9, 33, 1e3, &rng);
    if (!kc_quick())
        check_shape(2048, 4096, 1e3, &rng); /* 8M elements */
}

/* cols == 1: xhat == 0 exactly, so dgamma is +0 bit for bit and dx is 0 (PyTorch #188372
   returned nonzero weight.grad here). Row counts cover one and several blocks. */
static void one_column(void **state)
{
    (void)state;
    static const size_t rows_list[] = {1, 3, 64, 65, 200};
    tu_rng rng = {13};
    for (size_t r = 0; r < sizeof rows_list / sizeof *rows_list; r++) {
        problem p = make(rows_list[r], 1, 5.0, &rng);
        float *dx = kc_alloc(p.rows), dg = -1, db;
        const float plus_zero = 0.0f;
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, &dg, &db, p.rows, 1);
        assert_true(kc_same_bits(&dg, &plus_zero, 1));
        for (size_t i = 0; i < p.rows; i++)
            assert_true(dx[i] == 0.0f);
        free(dx);
        drop(&p);
    }
}

/* Each output is computed the same with or without the others, with gamma NULL as with
   ones (by value), in place (dx == dy), in any split of rows, and run after run. */
static void outputs_independent_of_call_shape(void **state)
{
    (void)state;
    static const size_t cols_list[] = {1, 3, 8, 17, 64, 100, 768, 1601};
    tu_rng rng = {14};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t rows = 70, cols = cols_list[c], n = rows * cols;
        problem p = make(rows, cols, 0.5, &rng);
        float *dx = kc_alloc(n), *dg = kc_alloc(cols), *db = kc_alloc(cols);
        float *dx2 = kc_alloc(n), *dg2 = kc_alloc(cols), *db2 = kc_alloc(cols),
              *ones = kc_alloc(cols);
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, db, rows, cols);
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx2, dg2, db2, rows, cols);
        assert_true(kc_same_bits(dx, dx2, n) && kc_same_bits(dg, dg2, cols) &&
                    kc_same_bits(db, db2, cols));
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx2, NULL, NULL, rows, cols);
        assert_true(kc_same_bits(dx, dx2, n));
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, NULL, dg2, NULL, rows, cols);
        assert_true(kc_same_bits(dg, dg2, cols));
        kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, NULL, NULL, db2, rows, cols);
        assert_true(kc_same_bits(db, db2, cols));
        const ln_bwd_args a = {.dy = p.dy, .lddy = cols, .x = p.x, .ldx = cols, .gamma = p.g,
                               .mean = p.mean, .rstd = p.rstd, .dx = dx2, .lddx = cols,
                               .cols = cols};
        for (size_t r = 0; r < rows; r += 3) /* rows in groups of three, no partials */
            K->backward(&a, r, r + 3 < rows ? r + 3 : rows, NULL, NULL);
        assert_true(kc_same_bits(dx, dx2, n));
        /* With partials (each piece's own), in pieces of every size a kernel groups rows
           by: 3, 1, 2, then 7 and 57 (groups of 4 and pairs, and what follows them). */
        static const size_t pieces[] = {0, 3, 4, 6, 13, 70};
        memset(dx2, 0, n * sizeof *dx2);
        for (size_t i = 0; i + 1 < sizeof pieces / sizeof *pieces; i++)
            K->backward(&a, pieces[i], pieces[i + 1], dg2, db2);
        assert_true(kc_same_bits(dx, dx2, n));
        for (size_t i = 0; i < cols; i++)
            ones[i] = 1.0f;
        kc_backward(K, p.dy, p.x, NULL, p.mean, p.rstd, dx, dg, db, rows, cols);
        kc_backward(K, p.dy, p.x, ones, p.mean, p.rstd, dx2, dg2, db2, rows, cols);
        for (size_t i = 0; i < n; i++)
            assert_true(dx[i] == dx2[i]);
        for (size_t i = 0; i < cols; i++)
            assert_true(dg[i] == dg2[i] && db[i] == db2[i]);
        memcpy(dx2, p.dy, n * sizeof *dx2); /* dx == dy */
        kc_backward(K, dx2, p.x, NULL, p.mean, p.rstd, dx2, NULL, NULL, rows, cols);
        assert_true(kc_same_bits(dx, dx2, n));
        free(dx), free(dg), free(db), free(dx2), free(dg2), free(db2), free(ones);
        drop(&p);
    }
}

/* Row strides: a strided view gives the bits of the contiguous rows. */
static void strided_rows(void **state)
{
    (void)state;
    tu_rng rng = {15};
    const size_t rows = 9, cols = 37, ld = 2 * cols + 7, n = rows * cols;
    problem p = make(rows, cols, 0.0, &rng);
    float *dx = kc_alloc(n), *dg = kc_alloc(cols), *dg2 = kc_alloc(cols);
    float *sdy = kc_alloc(rows * ld), *sx = kc_alloc(rows * ld), *sdx = kc_alloc(rows * ld);
    for (size_t r = 0; r < rows; r++) {
        memcpy(sdy + r * ld, p.dy + r * cols, cols * sizeof(float));
        memcpy(sx + r * ld, p.x + r * cols, cols * sizeof(float));
    }
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, NULL, rows, cols);
    const ln_bwd_args a = {.dy = sdy, .lddy = ld, .x = sx, .ldx = ld, .gamma = p.g, .mean = p.mean,
                           .rstd = p.rstd, .dx = sdx, .lddx = ld, .cols = cols};
    assert_int_equal(ln_backward_run(K, &a, rows, dg2, NULL), LN_OK);
    for (size_t r = 0; r < rows; r++)
        assert_true(kc_same_bits(sdx + r * ld, dx + r * cols, cols));
    assert_true(kc_same_bits(dg, dg2, cols));
    free(dx), free(dg), free(dg2), free(sdy), free(sx), free(sdx);
    drop(&p);
}

/* Non-temporal dx (args.nt) moves only where the stores go: the same bits as ordinary
   stores, whatever dx's alignment and row stride (the head before alignment is peeled
   with ordinary stores), with RMSNorm and with accumulation (which never streams), and
   with the cold call's prefetch hints. */
static void streamed_dx_same_bits(void **state)
{
    (void)state;
    /* Rows the streamed path's pass A loads aligned (bwd_reduce_aligned), every head width
       h = 1..15: 1601 columns (an even vector count) has rows 1..8 off by 1..8 floats,
       h = 15..8; 1631 (odd) has them off by 15, 14, ..., h = 1..8. Rows from 256 columns
       with a head stream joined (AVX-512); 4097, above 8 KiB, are hinted too. */
    static const size_t cols_list[] = {8, 17, 64, 100, 768, 1601, 1631, 4097};
    static const unsigned flags_list[] = {0, LN_FLAG_RMS_NORM, LN_FLAG_ACCUMULATE};
    tu_rng rng = {17};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t rows = 9, cols = cols_list[c];
        const size_t ld_list[] = {cols, cols + 1, (cols + 15) / 16 * 16};
        problem p = make(rows, cols, 3.0, &rng);
        for (size_t l = 0; l < 3; l++)
            for (size_t off = 0; off < 4; off++)
                for (size_t f = 0; f < 3; f++) {
                    const size_t ld = ld_list[l], len = off + rows * ld;
                    float *buf = aligned_alloc(64, (len + 15) / 16 * 64);
                    float *ref = kc_alloc(len), *dg = kc_alloc(cols), *db = kc_alloc(cols);
                    float *dg2 = kc_alloc(cols), *db2 = kc_alloc(cols);
                    assert_non_null(buf);
                    tu_fill_normal(&rng, ref, len, 0.0, 1.0); /* what ACCUMULATE adds to */
                    memcpy(buf, ref, len * sizeof *buf);
                    ln_bwd_args a = {.dy = p.dy, .lddy = cols, .x = p.x, .ldx = cols,
                                     .gamma = p.g, .mean = p.mean, .rstd = p.rstd,
                                     .dx = ref + off, .lddx = ld, .cols = cols,
                                     .flags = flags_list[f]};
                    K->backward(&a, 0, rows, dg, db);
                    a.dx = buf + off, a.nt = 1, a.pf_rows = rows; /* with the hints */
                    K->backward(&a, 0, rows, dg2, db2);
                    assert_true(kc_same_bits(buf, ref, len));
                    assert_true(kc_same_bits(dg, dg2, cols) && kc_same_bits(db, db2, cols));
                    free(buf), free(ref), free(dg), free(db), free(dg2), free(db2);
                }
        drop(&p);
    }
}

/* dx rows off their vector alignment (a packed row length or stride off the vector, dx
   itself off; AVX-512 regroups such rows' stores to aligned ones): the bits of the same
   rows written at an aligned stride, nothing written before, between or after the rows
   (canaries; no guard page: under qemu-x86_64 masked-off vmaskmovps lanes fault, and the
   guard-page suites that cover the kernels' reads are labelled to skip it there), with
   RMSNorm and ACCUMULATE, in place (dx == dy) too. Rows from 256 columns (16 vectors, where the regrouping starts), heads
   of several widths, an odd and an even vector count, tails of 0, 1, 4 and 15 lanes. */
static void unaligned_dx_same_bits(void **state)
{
    (void)state;
    static const size_t cols_list[] = {256, 257, 300, 513, 1601, 1631};
    static const unsigned flags_list[] = {0, LN_FLAG_RMS_NORM, LN_FLAG_ACCUMULATE};
    const float canary = -1234.5f;
    tu_rng rng = {19};
    for (size_t c = 0; c < sizeof cols_list / sizeof *cols_list; c++) {
        const size_t rows = 5, cols = cols_list[c], la = (cols + 15) / 16 * 16;
        const size_t ld_list[] = {cols, cols + 1, cols + 5};
        problem p = make(rows, cols, 3.0, &rng);
        float *old = kc_alloc(rows * cols), *ref = aligned_alloc(64, rows * la * sizeof(float));
        float *dg = kc_alloc(cols), *db = kc_alloc(cols), *dg2 = kc_alloc(cols);
        float *db2 = kc_alloc(cols);
        assert_non_null(ref);
        tu_fill_normal(&rng, old, rows * cols, 0.0, 1.0); /* what ACCUMULATE adds to */
        for (size_t l = 0; l < 3; l++)
            for (size_t off = 0; off < 8; off += 3)
                for (size_t f = 0; f < 6; f++) {
                    const unsigned flags = flags_list[f % 3];
                    const int in_place = f >= 3; /* dx == dy: dy's rows at dx's stride */
                    const size_t ld = ld_list[l], span = off + (rows - 1) * ld + cols;
                    const size_t len = span + 32; /* two vectors of canary after the rows */
                    float *buf = aligned_alloc(64, (len + 15) / 16 * 64);
                    assert_non_null(buf);
                    for (size_t i = 0; i < len; i++)
                        buf[i] = canary;
                    const float *src = in_place ? p.dy : old; /* what dx holds before */
                    for (size_t r = 0; r < rows; r++) {
                        memcpy(buf + off + r * ld, src + r * cols, cols * sizeof(float));
                        memcpy(ref + r * la, src + r * cols, cols * sizeof(float));
                    }
                    ln_bwd_args a = {.dy = p.dy, .lddy = cols, .x = p.x, .ldx = cols,
                                     .gamma = p.g, .mean = p.mean, .rstd = p.rstd, .dx = ref,
                                     .lddx = la, .cols = cols, .flags = flags};
                    K->backward(&a, 0, rows, dg, db);
                    a.dx = buf + off, a.lddx = ld;
                    if (in_place)
                        a.dy = a.dx, a.lddy = ld;
                    K->backward(&a, 0, rows, dg2, db2);
                    for (size_t r = 0; r < rows; r++)
                        assert_true(kc_same_bits(buf + off + r * ld, ref + r * la, cols));
                    for (size_t i = 0; i < len; i++) /* the head, the gaps and the end */
                        if ((i < off || i >= span || (i - off) % ld >= cols) && buf[i] != canary)
                            fail_msg("cols %zu ld %zu off %zu flags %u: float %zu written",
                                     cols, ld, off, flags, i);
                    assert_true(kc_same_bits(dg, dg2, cols) && kc_same_bits(db, db2, cols));
                    free(buf);
                }
        free(old), free(ref), free(dg), free(db), free(dg2), free(db2);
        drop(&p);
    }
}

/*
 * A NaN in dy or x poisons its own row of dx only. dgamma_j and dbeta_j are sums over rows
 * of column j, so a NaN reaches exactly the columns whose terms it enters:
 *   dy[r][j] NaN       dgamma_j and dbeta_j are NaN (both sums take dy[r][j]), every other
 *                      column bitwise what it is without the NaN;
 *   x[r][j] NaN        dgamma_j is NaN (xhat[r][j]); dbeta does not read x. The row's sum
 *                      of x - mean, which corrects the saved mean's rounding, is NaN too,
 *                      so that row goes uncorrected: its xhat move by at most that
 *                      rounding, u |mean| rstd, and the other columns of dgamma stay within
 *                      1e-6 of the vector's largest value (the contract's measure);
 *   mean[r] or rstd[r] NaN (what forward saves for a row holding a NaN): every xhat of row
 *                      r is NaN, so all of dgamma is NaN; dbeta is untouched.
 * More than one block of rows, so the NaN passes through the fold of partials too.
 */
static void nan_rows_are_contained(void **state)
{
    (void)state;
    tu_rng rng = {16};
    const size_t rows = 2 * LN_BWD_BLOCK + 5, cols = 100, n = rows * cols;
    problem p = make(rows, cols, 0.0, &rng);
    float *clean = kc_alloc(n), *dx = kc_alloc(n), *cg = kc_alloc(cols), *cb = kc_alloc(cols);
    float *dg = kc_alloc(cols), *db = kc_alloc(cols);
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, clean, cg, cb, rows, cols);
    p.dy[1 * cols + 7] = NAN;
    p.x[70 * cols + 99] = NAN;
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, db, rows, cols);
    for (size_t r = 0; r < rows; r++)
        if (r == 1 || r == 70)
            assert_true(isnan(dx[r * cols + 7]) && isnan(dx[r * cols + 50]));
        else
            assert_true(kc_same_bits(dx + r * cols, clean + r * cols, cols));
    double gmax = 0;
    for (size_t j = 0; j < cols; j++)
        gmax = j == 7 || j == 99 ? gmax : fmax(gmax, fabs(cg[j]));
    for (size_t j = 0; j < cols; j++) {
        if (!(j == 7 || j == 99 ? isnan(dg[j]) : fabs(dg[j] - cg[j]) <= 1e-6 * gmax))
            fail_msg("dgamma[%zu] %g, without the NaNs %g", j, dg[j], cg[j]);
        assert_true(j == 7 ? isnan(db[j]) : kc_same_bits(db + j, cb + j, 1));
    }
    /* The saved statistics of the x-NaN row, as forward writes them: NaN. */
    float *y = kc_alloc(cols), m70, r70;
    kc_forward(K, p.x + 70 * cols, NULL, NULL, y, &m70, &r70, 1, cols, 1e-5f);
    assert_true(isnan(m70) || isnan(r70));
    p.mean[70] = m70, p.rstd[70] = r70;
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, db, rows, cols);
    for (size_t j = 0; j < cols; j++) {
        assert_true(isnan(dg[j]));
        assert_true(j == 7 ? isnan(db[j]) : kc_same_bits(db + j, cb + j, 1));
    }
    for (size_t i = 0; i < cols; i++)
        assert_true(isnan(dx[70 * cols + i]));
    free(clean), free(dx), free(cg), free(cb), free(dg), free(db), free(y);
    drop(&p);
}

static int report(void **state)
{
    (void)state;
    printf("[ %-8s ] backward worst, as a fraction of the bound: dx %.3g, dgamma %.3g, "
           "dbeta %.3g; dx per row max|err|/max|ref| %.3g\n",
           K->name, worst_dx, worst_dg, worst_db, worst_dx_rel);
    return 0;
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    ORACLE = ln_kernels_get(LN_ISA_SCALAR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_shapes), cmocka_unit_test(offset_rows),
        cmocka_unit_test(one_column),    cmocka_unit_test(outputs_independent_of_call_shape),
        cmocka_unit_test(strided_rows),  cmocka_unit_test(nan_rows_are_contained),
        cmocka_unit_test(streamed_dx_same_bits), cmocka_unit_test(unaligned_dx_same_bits),
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, report);
}
