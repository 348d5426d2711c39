/* test_kernel_backward.c - one kernel's backward against the scalar oracle (NUMERICS.md). */
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
static double worst_dx, worst_dg, worst_db; /* in units of 1e-5 * ||ref||_inf */

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

/* ||got - ref||_inf <= 1e-5 ||ref||_inf: the contract's bound for M*N up to 8M elements.
   Returns the ratio to the bound (NaN in got gives NaN: never <= 1). */
static double inf_norm_ratio(const float *got, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs(ref[i]) > den ? fabs(ref[i]) : den;
    }
    if (den == 0) /* an all-zero reference (cols == 1) must be met exactly */
        return num == 0 ? 0 : INFINITY;
    return num / (1e-5 * den);
}

static void check_shape(size_t rows, size_t cols, double offset, tu_rng *rng)
{
    problem p = make(rows, cols, offset, rng);
    const size_t n = rows * cols;
    float *dx = kc_alloc(n), *dg = kc_alloc(cols), *db = kc_alloc(cols);
    float *rdx = kc_alloc(n), *rdg = kc_alloc(cols), *rdb = kc_alloc(cols);
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, dg, db, rows, cols);
    kc_backward(ORACLE, p.dy, p.x, p.g, p.mean, p.rstd, rdx, rdg, rdb, rows, cols);
    const double ex = inf_norm_ratio(dx, rdx, n), eg = inf_norm_ratio(dg, rdg, cols);
    const double eb = inf_norm_ratio(db, rdb, cols);
    worst_dx = ex > worst_dx ? ex : worst_dx;
    worst_dg = eg > worst_dg ? eg : worst_dg;
    worst_db = eb > worst_db ? eb : worst_db;
    if (!(ex <= 1 && eg <= 1 && eb <= 1))
        fail_msg("%zu x %zu offset %g: dx %.3g, dgamma %.3g, dbeta %.3g of the bound", rows, cols,
                 offset, ex, eg, eb);
    free(dx), free(dg), free(db), free(rdx), free(rdg), free(rdb);
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

/* A NaN in dy or x poisons its own row of dx only. */
static void nan_rows_are_contained(void **state)
{
    (void)state;
    tu_rng rng = {16};
    const size_t rows = 5, cols = 100, n = rows * cols;
    problem p = make(rows, cols, 0.0, &rng);
    float *clean = kc_alloc(n), *dx = kc_alloc(n);
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, clean, NULL, NULL, rows, cols);
    p.dy[1 * cols + 7] = NAN;
    p.x[3 * cols + 99] = NAN;
    kc_backward(K, p.dy, p.x, p.g, p.mean, p.rstd, dx, NULL, NULL, rows, cols);
    for (size_t r = 0; r < rows; r++)
        if (r == 1 || r == 3)
            assert_true(isnan(dx[r * cols + 7]) && isnan(dx[r * cols + 50]));
        else
            assert_true(kc_same_bits(dx + r * cols, clean + r * cols, cols));
    free(clean), free(dx);
    drop(&p);
}

static int report(void **state)
{
    (void)state;
    printf("[ %-8s ] backward worst, as a fraction of 1e-5*||ref||inf: dx %.3g, dgamma %.3g, "
           "dbeta %.3g\n",
           K->name, worst_dx, worst_dg, worst_db);
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
    };
    return cmocka_run_group_tests_name(K->name, tests, NULL, report);
}
