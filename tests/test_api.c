/* test_api.c - the public API as a user links it: semantics, every status code, no writes on error. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
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

/* This file's calloc stands in for the library's: the only way to reach LN_ERR_NOMEM
   without a test hook inside the library. It forwards to the next calloc, not glibc's
   own __libc_calloc, so that under ASan the memory comes from (and goes back to) ASan's
   allocator; valgrind needs --soname-synonyms=somalloc=nouserintercepts to keep it. */
static int g_fail_calloc;
void *calloc(size_t n, size_t size);
void *calloc(size_t n, size_t size)
{
    static void *(*next)(size_t, size_t);
    if (g_fail_calloc)
        return NULL;
    if (!next)
        *(void **)&next = dlsym(RTLD_NEXT, "calloc");
    return next(n, size);
}

enum { ROWS = 70, COLS = 9, N = ROWS * COLS }; /* 70 rows: two backward blocks */

/* All operands in one object, so "nothing written" is one memcmp of all of it. */
typedef struct bufs {
    float x[N], g[COLS], b[COLS], dy[N];
    float y[N], mean[ROWS], rstd[ROWS], dx[N], dg[COLS], db[COLS];
} bufs;

static bufs B, SNAP;

static void setup_bufs(void)
{
    tu_rng rng = {31};
    tu_fill_normal(&rng, B.x, N, 0.0, 1.0);
    tu_fill_normal(&rng, B.g, COLS, 1.0, 0.5);
    tu_fill_normal(&rng, B.b, COLS, 0.0, 0.5);
    tu_fill_normal(&rng, B.dy, N, 0.0, 1.0);
    assert_int_equal(ln_forward_f32(B.x, NULL, NULL, B.y, B.mean, B.rstd, ROWS, COLS, 1e-5f), LN_OK);
    tu_sentinel_fill(B.y, N);
    tu_sentinel_fill(B.dx, N);
    tu_sentinel_fill(B.dg, COLS);
    tu_sentinel_fill(B.db, COLS);
    SNAP = B;
}

#define EXPECT_UNTOUCHED(call, status)                                                      \
    do {                                                                                    \
        assert_int_equal((call), (status));                                                 \
        assert_memory_equal(&B, &SNAP, sizeof B);                                           \
    } while (0)

static void forward_errors_write_nothing(void **state)
{
    (void)state;
    setup_bufs();
    float *m = B.mean, *r = B.rstd;
    EXPECT_UNTOUCHED(ln_forward_f32(NULL, B.g, B.b, B.y, m, r, ROWS, COLS, 1e-5f), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, NULL, m, r, ROWS, COLS, 1e-5f), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, ROWS, 0, 1e-5f), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, SIZE_MAX / 8, COLS, 1e-5f), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, 2, SIZE_MAX / 4, 1e-5f), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, ROWS, COLS, -1e-5f), LN_ERR_EPS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, ROWS, COLS, NAN), LN_ERR_EPS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, ROWS, COLS, INFINITY), LN_ERR_EPS);
    /* Overlaps: partial in-place, outputs into parameters or into each other. */
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.x + 1, m, r, ROWS - 1, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x + 1, B.g, B.b, B.x, m, r, ROWS - 1, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, B.x + 5, r, ROWS, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, B.y, ROWS, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, m + 3, ROWS, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.g, m, r, 1, COLS, 1e-5f), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, B.b, r, ROWS, COLS, 1e-5f), LN_ERR_ALIAS);
    /* Checks come in the documented order: NULL before shape before eps before alias. */
    EXPECT_UNTOUCHED(ln_forward_f32(NULL, B.g, B.b, B.y, m, r, ROWS, 0, NAN), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.y, m, r, ROWS, 0, NAN), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_forward_f32(B.x, B.g, B.b, B.x + 1, m, r, ROWS - 1, COLS, NAN), LN_ERR_EPS);
    /* rows == 0 is a no-op whatever the pointers. */
    EXPECT_UNTOUCHED(ln_forward_f32(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NAN), LN_OK);
}

static void backward_errors_write_nothing(void **state)
{
    (void)state;
    setup_bufs();
    const float *m = B.mean, *r = B.rstd;
    EXPECT_UNTOUCHED(ln_backward_f32(NULL, B.x, B.g, m, r, B.dx, B.dg, B.db, ROWS, COLS), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, NULL, B.g, m, r, B.dx, B.dg, B.db, ROWS, COLS), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, NULL, r, B.dx, B.dg, B.db, ROWS, COLS), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, NULL, B.dx, B.dg, B.db, ROWS, COLS), LN_ERR_NULL);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.dg, B.db, ROWS, 0), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.dg, B.db, SIZE_MAX / 8, COLS), LN_ERR_SHAPE);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.x, B.dg, B.db, ROWS, COLS), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dy + 1, B.dg, B.db, ROWS - 1, COLS), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.dg, B.dg, ROWS, COLS), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.g, B.db, ROWS, COLS), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.dg, B.dx + 4, ROWS, COLS), LN_ERR_ALIAS);
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.rstd, B.db, ROWS, COLS), LN_ERR_ALIAS);
    /* The scratch for dgamma/dbeta is allocated before anything is written. */
    g_fail_calloc = 1;
    EXPECT_UNTOUCHED(ln_backward_f32(B.dy, B.x, B.g, m, r, B.dx, B.dg, B.db, ROWS, COLS), LN_ERR_NOMEM);
    g_fail_calloc = 0;
    EXPECT_UNTOUCHED(ln_backward_f32(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0), LN_OK);
}

/* NULL gamma/beta equal explicit ones/zeros; stats outputs are optional; in place
   equals out of place; the optional backward outputs are independent. */
static void optional_and_in_place_operands(void **state)
{
    (void)state;
    setup_bufs();
    static float ones[COLS], zeros[COLS], y1[N], y2[N], m1[ROWS], r1[ROWS];
    static float dx1[N], dx2[N], dg1[COLS], dg2[COLS], db1[COLS], db2[COLS];
    for (int i = 0; i < COLS; i++)
        ones[i] = 1.0f, zeros[i] = 0.0f;
    assert_int_equal(ln_forward_f32(B.x, NULL, NULL, y1, m1, r1, ROWS, COLS, 1e-5f), LN_OK);
    assert_int_equal(ln_forward_f32(B.x, ones, zeros, y2, NULL, NULL, ROWS, COLS, 1e-5f), LN_OK);
    for (int i = 0; i < N; i++)
        assert_true(y1[i] == y2[i]);
    memcpy(y2, B.x, sizeof y2);
    assert_int_equal(ln_forward_f32(y2, NULL, NULL, y2, NULL, NULL, ROWS, COLS, 1e-5f), LN_OK);
    assert_memory_equal(y1, y2, sizeof y1);

    assert_int_equal(ln_backward_f32(B.dy, B.x, NULL, m1, r1, dx1, dg1, db1, ROWS, COLS), LN_OK);
    assert_int_equal(ln_backward_f32(B.dy, B.x, ones, m1, r1, dx2, NULL, NULL, ROWS, COLS), LN_OK);
    for (int i = 0; i < N; i++)
        assert_true(dx1[i] == dx2[i]);
    assert_int_equal(ln_backward_f32(B.dy, B.x, NULL, m1, r1, NULL, dg2, NULL, ROWS, COLS), LN_OK);
    assert_int_equal(ln_backward_f32(B.dy, B.x, NULL, m1, r1, NULL, NULL, db2, ROWS, COLS), LN_OK);
    assert_memory_equal(dg1, dg2, sizeof dg1);
    assert_memory_equal(db1, db2, sizeof db1);
    memcpy(dx2, B.dy, sizeof dx2);
    assert_int_equal(ln_backward_f32(dx2, B.x, NULL, m1, r1, dx2, NULL, NULL, ROWS, COLS), LN_OK);
    assert_memory_equal(dx1, dx2, sizeof dx1);
    assert_int_equal(ln_backward_f32(B.dy, B.x, NULL, m1, r1, NULL, NULL, NULL, ROWS, COLS), LN_OK);
}

static void status_strings_and_version(void **state)
{
    (void)state;
    const char *seen[LN_ERR_KIND + 1];
    for (int s = LN_OK; s <= LN_ERR_KIND; s++) {
        seen[s] = ln_status_string(s);
        assert_non_null(seen[s]);
        assert_true(strlen(seen[s]) > 0);
        assert_string_not_equal(seen[s], "unknown status");
        for (int t = 0; t < s; t++)
            assert_string_not_equal(seen[s], seen[t]);
    }
    assert_string_equal(ln_status_string(-1), "unknown status");
    assert_string_equal(ln_status_string(1000), "unknown status");
    /* The loaded library is the version of the header this test compiled against. */
    assert_int_equal(ln_version(), LN_VERSION_MAJOR * 10000 + LN_VERSION_MINOR * 100 + LN_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", LN_VERSION_MAJOR, LN_VERSION_MINOR, LN_VERSION_PATCH);
    assert_string_equal(ln_version_string(), want);
    assert_string_equal(LN_VERSION_STRING, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_errors_write_nothing),
        cmocka_unit_test(backward_errors_write_nothing),
        cmocka_unit_test(optional_and_in_place_operands),
        cmocka_unit_test(status_strings_and_version),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
