/* test_nt_bytes.c - LN_NT_BYTES parsing, and the runner's streamed outputs against plain ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ln_internal.h"
#include "testutil.h"

/* argv[1]: the threshold LN_NT_BYTES must give, or "default": min(LLC, 32 MiB) / 3. */
static const char *g_expect;

static void threshold_is_parsed(void **state)
{
    (void)state;
    const size_t llc = ln_cpu_llc_bytes(), cap = (size_t)32 << 20;
    const size_t want = strcmp(g_expect, "default") == 0 ? (llc && llc < cap ? llc : cap) / 3
                                                         : (size_t)strtoull(g_expect, NULL, 10);
    assert_int_equal(ln_nt_bytes(), want);
}

#if defined(__x86_64__) || defined(_M_X64)
/* The cold hints by AMD family and model, the cases no CI machine or qemu model covers:
   prefetchnta from Zen 1 on, 16 KiB float rows on Zen 5, 32 KiB on Zen 3 but not Zen 4
   (same family 0x19; kernels/ln_common.h says why each). */
static void amd_hints_by_model(void **state)
{
    (void)state;
    static const struct {
        unsigned family, model, want;
    } cases[] = {
        {0x15, 0x02, 0u},                                 /* Bulldozer */
        {0x17, 0x31, LN_NT_PF_NTA},                       /* Zen 2, Rome */
        {0x18, 0x00, LN_NT_PF_NTA},                       /* Hygon Dhyana */
        {0x19, 0x01, LN_NT_PF_NTA | LN_NT_PF_LONG32},     /* Zen 3, Milan */
        {0x19, 0x21, LN_NT_PF_NTA | LN_NT_PF_LONG32},     /* Zen 3, Vermeer */
        {0x19, 0x50, LN_NT_PF_NTA | LN_NT_PF_LONG32},     /* Zen 3, Cezanne */
        {0x19, 0x11, LN_NT_PF_NTA},                       /* Zen 4, Genoa */
        {0x19, 0x61, LN_NT_PF_NTA},                       /* Zen 4, Raphael */
        {0x19, 0x74, LN_NT_PF_NTA},                       /* Zen 4, Phoenix */
        {0x19, 0xa0, LN_NT_PF_NTA},                       /* Zen 4c, Bergamo */
        {0x1a, 0x02, LN_NT_PF_NTA | LN_NT_PF_LONG},       /* Zen 5, Turin */
        {0x1a, 0x44, LN_NT_PF_NTA | LN_NT_PF_LONG},       /* Zen 5, Granite Ridge */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        printf("# family 0x%x model 0x%02x\n", cases[i].family, cases[i].model);
        assert_int_equal(ln_amd_nt_hints(cases[i].family, cases[i].model), cases[i].want);
    }
}
#endif

/* Through the runner (which sets args.nt when the operands reach the threshold) against the
   active kernel called directly with nt = 0: bitwise the same y, mean, rstd, for a y
   misaligned by one float and an odd ldy. */
static void runner_output_same_bits(void **state)
{
    (void)state;
    const size_t rows = 7, cols = 1000, ld = 1003;
    float *x = malloc(rows * ld * sizeof *x), *g = malloc(cols * sizeof *g);
    float *b = malloc(cols * sizeof *b), *y1 = calloc(rows * ld + 1, sizeof *y1);
    float *y2 = calloc(rows * ld + 1, sizeof *y2), m1[7], r1[7], m2[7], r2[7];
    assert_true(x && g && b && y1 && y2);
    tu_rng rng = {9};
    tu_fill_normal(&rng, x, rows * ld, 1.0, 2.0);
    tu_fill_normal(&rng, g, cols, 0.0, 1.0);
    tu_fill_normal(&rng, b, cols, 0.0, 1.0);
    const ln_fwd_args a = {.x = x, .ldx = ld, .gamma = g, .beta = b, .y = y1 + 1, .ldy = ld,
                           .mean = m1, .rstd = r1, .cols = cols, .eps = 1e-5f};
    ln_forward_run(ln_active(), &a, rows);
    ln_fwd_args d = a;
    d.y = y2 + 1, d.mean = m2, d.rstd = r2;
    ln_active()->forward(&d, 0, rows);
    assert_memory_equal(y1, y2, (rows * ld + 1) * sizeof *y1);
    assert_memory_equal(m1, m2, sizeof m1);
    assert_memory_equal(r1, r2, sizeof r1);
    free(x), free(g), free(b), free(y1), free(y2);
}

/* GELU's forward through the runner (LN_GELU_NT from the threshold on) against the active
   kernel asked for ordinary stores: the same bits, y misaligned by one float, nothing
   written around it. */
static void runner_gelu_same_bits(void **state)
{
    (void)state;
    const size_t n = 1000;
    float *x = malloc(n * sizeof *x), *y1 = calloc(n + 2, sizeof *y1);
    float *y2 = calloc(n + 2, sizeof *y2);
    assert_true(x && y1 && y2);
    tu_rng rng = {10};
    tu_fill_normal(&rng, x, n, 0.0, 3.0);
    for (int kind = LN_GELU_TANH; kind <= LN_GELU_ERF; kind++) {
        ln_gelu_forward_run(ln_active(), x, y1 + 1, n, kind);
        ln_active()->gelu_forward(x, y2 + 1, n, kind);
        assert_memory_equal(y1, y2, (n + 2) * sizeof *y1);
    }
    free(x), free(y1), free(y2);
}

int main(int argc, char **argv)
{
    g_expect = argc > 1 ? argv[1] : "default";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threshold_is_parsed),
#if defined(__x86_64__) || defined(_M_X64)
        cmocka_unit_test(amd_hints_by_model),
#endif
        cmocka_unit_test(runner_output_same_bits),
        cmocka_unit_test(runner_gelu_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
