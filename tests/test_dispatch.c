/* test_dispatch.c - ISA choice: detection, the LN_MAX_ISA cap, ln_set_max_isa, names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "layernorm.h"
#include "testutil.h"

/* Rank within an architecture, as the header documents the cap: scalar < avx2 < avx512,
   scalar < neon < sve. */
static int rank(int isa) { return isa == LN_ISA_AVX512 || isa == LN_ISA_SVE ? 2 : isa != LN_ISA_SCALAR; }

/* The best available ISA not above `cap` (cap < 0: no cap). */
static int best_under(int cap)
{
    int best = LN_ISA_SCALAR;
    for (int isa = 0; isa <= LN_ISA_SVE; isa++)
        if (ln_isa_available(isa) && (cap < 0 || rank(isa) <= rank(cap)) && rank(isa) > rank(best))
            best = isa;
    return best;
}

/* The cap this process started with: LN_MAX_ISA if it names an ISA of this architecture
   (any case), else none. Set per ctest entry. */
static int env_cap(void)
{
    const char *env = getenv("LN_MAX_ISA");
    if (!env)
        return -1;
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        const int same_arch =
#if defined(__x86_64__)
            isa <= LN_ISA_AVX512;
#elif defined(__aarch64__)
            isa == LN_ISA_SCALAR || isa >= LN_ISA_NEON;
#else
            isa == LN_ISA_SCALAR;
#endif
        if (strcasecmp(env, ln_isa_name(isa)) == 0 && same_arch)
            return isa;
    }
    return -1;
}

/* Must run first: the environment decides the kernel at first use. */
static void environment_cap_applies_at_first_use(void **state)
{
    (void)state;
    assert_int_equal(ln_get_isa(), best_under(env_cap()));
    const char *want = getenv("LN_EXPECT_ISA"); /* set where the answer is known */
    if (want)
        assert_string_equal(ln_isa_name(ln_get_isa()), want);
}

/* Detection against the compiler's independent CPUID reading (which also checks that
   the OS enabled the register state). */
static void detection_matches_cpu(void **state)
{
    (void)state;
    assert_true(ln_isa_available(LN_ISA_SCALAR));
#if defined(__x86_64__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const int avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                       __builtin_cpu_supports("avx512dq");
    /* Available means compiled in *and* supported: never more than the CPU has. */
    assert_true(!ln_isa_available(LN_ISA_AVX2) || avx2);
#if LN_TEST_EMULATED_AVX512
    /* An emulated build runs its AVX-512 kernel on any x86-64 CPU, and says so. */
    (void)avx512;
    assert_true(ln_isa_available(LN_ISA_AVX512));
#else
    assert_true(!ln_isa_available(LN_ISA_AVX512) || avx512);
#endif
    assert_false(ln_isa_available(LN_ISA_NEON));
    assert_false(ln_isa_available(LN_ISA_SVE));
#elif defined(__aarch64__)
    assert_false(ln_isa_available(LN_ISA_AVX2));
    assert_false(ln_isa_available(LN_ISA_AVX512));
#endif
    /* The build's kernels, when the CPU has them, must be found (LN_EXPECT_AVAILABLE
       lists the ISAs a ctest entry knows this machine and build must offer). */
    const char *expect = getenv("LN_EXPECT_AVAILABLE");
    if (expect) {
        char list[128];
        strncpy(list, expect, sizeof list - 1);
        list[sizeof list - 1] = 0;
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
            assert_true(ln_isa_available(tu_isa_from_name(tok)));
    }
}

static void set_max_isa_caps_and_refuses(void **state)
{
    (void)state;
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        const int before = ln_get_isa();
        if (ln_isa_available(isa)) {
            assert_int_equal(ln_set_max_isa(isa), LN_OK);
            assert_int_equal(ln_get_isa(), isa);
        } else {
            assert_int_equal(ln_set_max_isa(isa), LN_ERR_ISA);
            assert_int_equal(ln_get_isa(), before);
        }
    }
    const int before = ln_get_isa();
    assert_int_equal(ln_set_max_isa(-1), LN_ERR_ISA);
    assert_int_equal(ln_set_max_isa(5), LN_ERR_ISA);
    assert_int_equal(ln_set_max_isa(1 << 20), LN_ERR_ISA);
    assert_int_equal(ln_get_isa(), before);
    /* Back to the best: the cap at the top of this architecture. */
    assert_int_equal(ln_set_max_isa(best_under(-1)), LN_OK);
    assert_int_equal(ln_get_isa(), best_under(-1));
}

/* The cap is process-wide and takes effect for the next call: forward through the API
   gives the forced kernel's bits (compared across ISAs only for finiteness here; the
   kernel suites compare values). */
static void every_available_isa_runs_through_the_api(void **state)
{
    (void)state;
    float x[3 * 5] = {1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 7, 7, 7, 7, 7}, y[15];
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        if (!ln_isa_available(isa))
            continue;
        assert_int_equal(ln_set_max_isa(isa), LN_OK);
        assert_int_equal(ln_forward_f32(x, NULL, NULL, y, NULL, NULL, 3, 5, 1e-5f), LN_OK);
        for (int i = 0; i < 10; i++)
            assert_true(y[i] == y[i] && y[i] > -2 && y[i] < 2);
        for (int i = 10; i < 15; i++)
            assert_true(y[i] == 0.0f); /* constant row */
    }
}

static void names(void **state)
{
    (void)state;
    static const char *const want[] = {"scalar", "avx2", "avx512", "neon", "sve"};
    for (int isa = 0; isa <= LN_ISA_SVE; isa++)
        assert_string_equal(ln_isa_name(isa), want[isa]);
    assert_string_equal(ln_isa_name(-1), "unknown");
    assert_string_equal(ln_isa_name(5), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(environment_cap_applies_at_first_use),
        cmocka_unit_test(detection_matches_cpu),
        cmocka_unit_test(set_max_isa_caps_and_refuses),
        cmocka_unit_test(every_available_isa_runs_through_the_api),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests_name("dispatch", tests, NULL, NULL);
}
