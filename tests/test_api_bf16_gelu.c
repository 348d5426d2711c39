/* test_api_bf16_gelu.c - the bf16 and GELU entry points as a user sees them: checks, status codes,
 * no writes on error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "layernorm.h"

#define N 8
#define S 0xA5A5u /* sentinel: any write on an error path shows */

static int intact(const uint16_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != S)
            return 0;
    return 1;
}

static void bf16_checks(void **state)
{
    (void)state;
    uint16_t x[2 * N], y[2 * N], dx[2 * N];
    float m[2], r[2], dg[N];
    for (int i = 0; i < 2 * N; i++)
        x[i] = (uint16_t)(0x3F80u + i); /* 1.0 upwards */
    memset(y, 0xA5, sizeof y);
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, y, m, r, 0, N, 1e-5f), LN_OK);
    assert_int_equal(ln_forward_bf16(NULL, NULL, NULL, y, m, r, 2, N, 1e-5f), LN_ERR_NULL);
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, y, m, r, 2, 0, 1e-5f), LN_ERR_SHAPE);
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, y, m, r, 2, SIZE_MAX / 2, 1e-5f), LN_ERR_SHAPE);
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, y, m, r, 2, N, -1.0f), LN_ERR_EPS);
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, x + 1, m, r, 2, N, 1e-5f), LN_ERR_ALIAS);
    assert_true(intact(y, 2 * N));
    assert_int_equal(ln_forward_bf16(x, NULL, NULL, y, m, r, 2, N, 1e-5f), LN_OK);
    assert_false(intact(y, 2 * N));
    memset(dx, 0xA5, sizeof dx);
    assert_int_equal(ln_backward_bf16(x, x, NULL, NULL, r, dx, dg, NULL, 2, N), LN_ERR_NULL);
    assert_int_equal(ln_backward_bf16(x, x, NULL, m, r, dx, dg, NULL, 2, 0), LN_ERR_SHAPE);
    assert_int_equal(ln_backward_bf16(x, x, NULL, m, r, x + 3, dg, NULL, 2, N), LN_ERR_ALIAS);
    assert_int_equal(ln_backward_bf16(x, x, NULL, m, r, dx, (float *)(void *)dx, NULL, 2, N),
                     LN_ERR_ALIAS);
    assert_true(intact(dx, 2 * N));
    assert_int_equal(ln_backward_bf16(y, x, NULL, m, r, y, dg, NULL, 2, N), LN_OK); /* dx == dy */
}

static void gelu_checks(void **state)
{
    (void)state;
    float x[N] = {-2, -1, -0.5f, 0, 0.5f, 1, 2, 3}, y[N], d[N];
    memset(y, 0xA5, sizeof y);
    assert_int_equal(ln_gelu_forward_f32(NULL, y, 0, 7), LN_OK);
    assert_int_equal(ln_gelu_forward_f32(NULL, y, N, LN_GELU_TANH), LN_ERR_NULL);
    assert_int_equal(ln_gelu_forward_f32(x, y, SIZE_MAX / 2, LN_GELU_TANH), LN_ERR_SHAPE);
    assert_int_equal(ln_gelu_forward_f32(x, y, N, 2), LN_ERR_KIND);
    assert_int_equal(ln_gelu_forward_f32(x, y, N, -1), LN_ERR_KIND);
    assert_int_equal(ln_gelu_forward_f32(x, x + 1, N - 1, LN_GELU_ERF), LN_ERR_ALIAS);
    assert_true(intact((const uint16_t *)(const void *)y, 2 * N));
    memset(d, 0xA5, sizeof d);
    assert_int_equal(ln_gelu_backward_f32(NULL, x, d, N, LN_GELU_ERF), LN_ERR_NULL);
    assert_int_equal(ln_gelu_backward_f32(x, x, d, N, 5), LN_ERR_KIND);
    assert_int_equal(ln_gelu_backward_f32(y, x, x + 2, N - 2, LN_GELU_ERF), LN_ERR_ALIAS);
    assert_true(intact((const uint16_t *)(const void *)d, 2 * N));
    assert_string_equal(ln_status_string(LN_ERR_KIND), "unknown kind (e.g. GELU variant)");
    for (int kind = 0; kind < 2; kind++) {
        assert_int_equal(ln_gelu_forward_f32(x, y, N, kind), LN_OK);
        assert_true(y[3] == 0.0f && y[6] > 1.9f && y[6] < 2.0f && y[0] < 0.0f && y[0] > -0.05f);
        memcpy(d, x, sizeof d);
        assert_int_equal(ln_gelu_forward_f32(d, d, N, kind), LN_OK); /* in place */
        assert_memory_equal(d, y, sizeof d);
        assert_int_equal(ln_gelu_backward_f32(x, x, d, N, kind), LN_OK);
        assert_true(d[3] == 0.0f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_checks),
        cmocka_unit_test(gelu_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
