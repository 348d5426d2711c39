/* test_api_strided_flags.c - the 1.1 entry points as users call them: equivalences, statuses, views. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layernorm.h"
#include "testutil.h"

enum { ROWS = 66, COLS = 24, N = ROWS * COLS };

/* One object holding every operand, so "nothing written" is one memcmp. The wide buffer
   holds interleaved views: x = wide, y = wide + COLS, both with ld = 2 COLS. */
typedef struct bufs {
    float x[N], res[N], g[COLS], b[COLS], dy[N], wide[2 * N];
    float y[N], sum[N], mean[ROWS], rstd[ROWS], dx[N], dg[COLS], db[COLS];
} bufs;
static bufs B, SNAP;

static void setup(void)
{
    tu_rng rng = {51};
    tu_fill_normal(&rng, B.x, N, 0.5, 1.0);
    tu_fill_normal(&rng, B.res, N, 0.0, 2.0);
    tu_fill_normal(&rng, B.g, COLS, 1.0, 0.2);
    tu_fill_normal(&rng, B.b, COLS, 0.0, 0.2);
    tu_fill_normal(&rng, B.dy, N, 0.0, 1.0);
    tu_fill_normal(&rng, B.wide, 2 * N, 0.0, 1.0);
    assert_int_equal(ln_forward_f32(B.x, B.g, B.b, B.y, B.mean, B.rstd, ROWS, COLS, 1e-5f), LN_OK);
    tu_sentinel_fill(B.sum, N);
    tu_sentinel_fill(B.dx, N);
    tu_sentinel_fill(B.dg, COLS);
    SNAP = B;
}

#define EXPECT_UNTOUCHED(call, status)                                                     \
    do {                                                                                   \
        assert_int_equal((call), (status));                                                \
        assert_memory_equal(&B, &SNAP, sizeof B);                                          \
    } while (0)

/* For every ISA: the v1.0 functions are the _ex ones with ld = cols and flags = 0. */
static void v10_equals_ex(void **state)
{
    (void)state;
    setup();
    static float y1[N], y2[N], m1[ROWS], m2[ROWS], dx1[N], dx2[N], dg1[COLS], dg2[COLS];
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        if (ln_set_max_isa(isa) != LN_OK)
            continue;
        assert_int_equal(ln_forward_f32(B.x, B.g, B.b, y1, m1, NULL, ROWS, COLS, 1e-5f), 0);
        assert_int_equal(ln_forward_ex_f32(B.x, COLS, B.g, B.b, y2, COLS, m2, NULL, ROWS, COLS, 1e-5f, 0), 0);
        assert_memory_equal(y1, y2, sizeof y1);
        assert_memory_equal(m1, m2, sizeof m1);
        assert_int_equal(ln_backward_f32(B.dy, B.x, B.g, B.mean, B.rstd, dx1, dg1, NULL, ROWS, COLS), 0);
        assert_int_equal(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, B.g, B.mean, B.rstd, dx2, COLS,
                                            dg2, NULL, ROWS, COLS, 0), 0);
        assert_memory_equal(dx1, dx2, sizeof dx1);
        assert_memory_equal(dg1, dg2, sizeof dg1);
    }
}

static void ex_statuses_write_nothing(void **state)
{
    (void)state;
    setup();
    float *w = B.wide;
    const float nan = NAN;
    /* Shapes: a stride below cols, or a strided size past SIZE_MAX. */
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS - 1, NULL, NULL, B.y, COLS, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.y, 0, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, SIZE_MAX / 2, NULL, NULL, B.y, COLS, NULL, NULL, 3, COLS, 1e-5f, 0), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_backward_ex_f32(B.dy, COLS, B.x, 1, NULL, B.mean, B.rstd, B.dx, COLS, NULL, NULL, ROWS, COLS, 0), LN_ERR_SHAPE);
    /* Flags: unknown bits, and accumulation where it means nothing (forward). */
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.y, COLS, NULL, NULL, ROWS, COLS, 1e-5f, LN_FLAG_ACCUMULATE), LN_ERR_FLAGS);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.y, COLS, NULL, NULL, ROWS, COLS, 1e-5f, 0x4u), LN_ERR_FLAGS);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.y, COLS, NULL, NULL, ROWS, COLS, 1e-5f, 0x80000000u), LN_ERR_FLAGS);
    EXPECT_UNTOUCHED(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, NULL, B.mean, B.rstd, B.dx, COLS, B.dg, NULL, ROWS, COLS, 0x8u), LN_ERR_FLAGS);
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, B.res, NULL, NULL, NULL, B.y, NULL, NULL, ROWS, COLS, 1e-5f, LN_FLAG_ACCUMULATE), LN_ERR_FLAGS);
    /* Order: eps is judged before flags, flags before overlaps. */
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.y, COLS, NULL, NULL, ROWS, COLS, nan, 0x4u), LN_ERR_EPS);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(B.x, COLS, NULL, NULL, B.x + 1, COLS, NULL, NULL, ROWS - 1, COLS, 1e-5f, 0x4u), LN_ERR_FLAGS);
    /* Views: rows that share bytes are an overlap; in place needs equal strides. */
    EXPECT_UNTOUCHED(ln_forward_ex_f32(w, 2 * COLS, NULL, NULL, w + 1, 2 * COLS, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_ex_f32(w, 2 * COLS, NULL, NULL, w, COLS, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_ex_f32(w, 2 * COLS, B.x, COLS, NULL, B.mean, B.rstd, w + COLS - 1, 2 * COLS, NULL, NULL, ROWS, COLS, 0), LN_ERR_ALIAS);
    /* The fused add: residual required; sum may be residual, not x; y may be x, not residual. */
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, NULL, NULL, NULL, B.sum, B.y, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, B.res, NULL, NULL, B.x, B.y, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, B.res, NULL, NULL, B.sum, B.res, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, B.res, NULL, NULL, B.y, B.y, NULL, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_add_forward_f32(B.x, B.res, NULL, NULL, B.sum, B.y, B.sum + 3, NULL, ROWS, COLS, 1e-5f, 0), LN_ERR_ALIAS);
    /* Without LN_FLAG_RMS_NORM backward needs the mean; with it the mean is not read. */
    EXPECT_UNTOUCHED(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, NULL, NULL, B.rstd, B.dx, COLS, NULL, NULL, ROWS, COLS, 0), LN_ERR_NULL);
    assert_int_equal(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, NULL, NULL, B.rstd, B.dx, COLS, NULL, NULL, ROWS, COLS, LN_FLAG_RMS_NORM), LN_OK);
    assert_true(!tu_sentinel_intact(B.dx, N));
}

/* Interleaved views of one buffer are not an overlap, and give the contiguous bits. */
static void interleaved_views(void **state)
{
    (void)state;
    setup();
    static float y[N], m[ROWS], r[ROWS];
    for (size_t i = 0; i < ROWS; i++)
        memcpy(B.wide + i * 2 * COLS, B.x + i * COLS, COLS * sizeof(float));
    assert_int_equal(ln_forward_f32(B.x, B.g, B.b, y, m, r, ROWS, COLS, 1e-5f), LN_OK);
    assert_int_equal(ln_forward_ex_f32(B.wide, 2 * COLS, B.g, B.b, B.wide + COLS, 2 * COLS, NULL,
                                       NULL, ROWS, COLS, 1e-5f, 0), LN_OK);
    for (size_t i = 0; i < ROWS; i++) {
        assert_memory_equal(B.wide + i * 2 * COLS, B.x + i * COLS, COLS * sizeof(float));
        assert_memory_equal(B.wide + i * 2 * COLS + COLS, y + i * COLS, COLS * sizeof(float));
    }
    /* dx == dy in place through strided views, with accumulation: dx = dy + fresh. */
    static float fresh[N];
    assert_int_equal(ln_backward_f32(B.dy, B.x, NULL, m, r, fresh, NULL, NULL, ROWS, COLS), LN_OK);
    for (size_t i = 0; i < ROWS; i++)
        memcpy(B.wide + i * 2 * COLS + COLS, B.dy + i * COLS, COLS * sizeof(float));
    float *dy = B.wide + COLS;
    assert_int_equal(ln_backward_ex_f32(dy, 2 * COLS, B.wide, 2 * COLS, NULL, m, r, dy, 2 * COLS,
                                        NULL, NULL, ROWS, COLS, LN_FLAG_ACCUMULATE), LN_OK);
    for (size_t i = 0; i < ROWS; i++)
        for (size_t j = 0; j < COLS; j++) {
            const double want = (double)B.dy[i * COLS + j] + fresh[i * COLS + j];
            /* One or two roundings of a sum of two floats (see test_kernel_strided_flags.c). */
            assert_true(fabs(dy[i * 2 * COLS + j] - want) <=
                        TU_EPS32 * (fabs(B.dy[i * COLS + j]) + 2.0001 * fabs(fresh[i * COLS + j])));
        }
}

/* LN_FLAG_ACCUMULATE adds the rows' dgamma/dbeta to the caller's values once, in double:
   with one block of rows (<= 64) the plain call's result is that block's float partial,
   so the sum is (float)(plain + old) exactly; with more the plain result is the double
   fold S rounded, so |acc - (plain + old)| <= u |S + old| + u |S|, u = 2^-24, with S and
   S + old taken as plain and acc (relative slack 2^-20 for that). */
static void accumulate_adds_once(void **state)
{
    (void)state;
    setup();
    static float old[2 * COLS], plain[2 * COLS], acc[2 * COLS], dx[N];
    tu_rng rng = {52};
    tu_fill_normal(&rng, old, 2 * COLS, 0.0, 30.0);
    const size_t rows[2] = {3, ROWS};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, B.g, B.mean, B.rstd, dx, COLS,
                                            plain, plain + COLS, rows[i], COLS, 0), LN_OK);
        memcpy(acc, old, sizeof acc);
        memcpy(dx, B.dy, sizeof dx);
        assert_int_equal(ln_backward_ex_f32(B.dy, COLS, B.x, COLS, B.g, B.mean, B.rstd, dx, COLS,
                                            acc, acc + COLS, rows[i], COLS, LN_FLAG_ACCUMULATE),
                         LN_OK);
        for (size_t j = 0; j < 2 * COLS; j++) {
            const double want = (double)plain[j] + (double)old[j];
            if (rows[i] <= 64)
                assert_true(acc[j] == (float)want);
            else
                assert_true(fabs(acc[j] - want) <=
                            TU_EPS32 * (fabs(acc[j]) + fabs(plain[j])) * (1 + 0x1p-20));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v10_equals_ex),
        cmocka_unit_test(ex_statuses_write_nothing),
        cmocka_unit_test(interleaved_views),
        cmocka_unit_test(accumulate_adds_once),
    };
    return cmocka_run_group_tests_name("api_strided_flags", tests, NULL, NULL);
}
