/* test_cpu_detect.c - the real CPU detection on a known CPU (qemu's, valgrind's) picks what it must. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ln_internal.h"
#include "testutil.h"

/* The ISA set the CPU under test must report, e.g. "scalar,avx2" (argv[1]), and how its
   cold prefetch hints must go out, "nta" or "t1" (argv[2]). */
static unsigned g_expect_mask;
static const char *g_expect_hints;

static unsigned parse_mask(const char *list)
{
    unsigned mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const int isa = tu_isa_from_name(tok);
        if (isa < 0)
            return 0;
        mask |= 1u << isa;
    }
    return mask;
}

/* Exactly the expected features: a missing bit means a kernel left idle, an extra bit
   means a kernel that would SIGILL on this CPU. */
static void cpu_mask_is_expected(void **state)
{
    (void)state;
    const unsigned got = ln_cpu_isa_mask() | (1u << LN_ISA_SCALAR);
    printf("# cpu mask 0x%x, expected 0x%x\n", got, g_expect_mask);
    assert_int_equal(got, g_expect_mask);
}

/* Dispatch picks the best compiled-in kernel among the expected ISAs, with no cap. The
   ranks are the header's: within one architecture a higher id is the better ISA. */
static void dispatch_picks_best(void **state)
{
    (void)state;
    int want = LN_ISA_SCALAR;
    for (int isa = 0; isa <= LN_ISA_SVE; isa++) {
        const int expected = (g_expect_mask >> isa) & 1u, usable = ln_kernels_get(isa) != NULL;
        if (!expected)
            assert_false(usable);
        else if (usable)
            want = isa;
        else
            printf("# %s is expected on this CPU but not compiled in\n", ln_isa_name(isa));
    }
    printf("# ln_get_isa() = %s, expected %s\n", ln_isa_name(ln_get_isa()), ln_isa_name(want));
    assert_int_equal(ln_get_isa(), want);
    assert_int_equal(ln_kernels_get(want)->isa, want);
}

/* The hint bits (argv[2]: "t1", "nta", "nta+long" for 16 KiB float rows as well, or
   "nta+long32" for 32 KiB). */
static unsigned expected_hints(const char *name)
{
    return strcmp(name, "t1") == 0         ? 0u
           : strcmp(name, "nta") == 0      ? LN_NT_PF_NTA
           : strcmp(name, "nta+long") == 0 ? LN_NT_PF_NTA | LN_NT_PF_LONG
           : strcmp(name, "nta+long32") == 0 ? LN_NT_PF_NTA | LN_NT_PF_LONG32
                                           : ~0u;
}

/* prefetchnta on AMD Zen (family 0x17 on) only: qemu's AMD models of family 0xf and its
   Intel ones must keep prefetcht1 (dispatch.c: ln_nt_mode); the 16 KiB row bound on Zen 5
   (family 0x1a) only, the 32 KiB one on Zen 3 only, which none of qemu's models is. */
static void hints_are_expected(void **state)
{
    (void)state;
    const unsigned h = ln_cpu_nt_hints();
    printf("# cold hints %s%s, expected %s\n", h & LN_NT_PF_NTA ? "nta" : "t1",
           h & LN_NT_PF_LONG32 ? "+long32" : h & LN_NT_PF_LONG ? "+long" : "", g_expect_hints);
    assert_int_equal(h, expected_hints(g_expect_hints));
    assert_int_equal(ln_nt_mode(), LN_NT_COLD | h);
}

int main(int argc, char **argv)
{
    if (argc != 3 || !(g_expect_mask = parse_mask(argv[1])) ||
        expected_hints(argv[2]) == ~0u) {
        fprintf(stderr, "usage: %s ISA[,ISA...] t1|nta|nta+long|nta+long32  (what this CPU must report)\n",
                argv[0]);
        return 2;
    }
    g_expect_hints = argv[2];
    /* The cap would hide what detection found: this test is about the uncapped choice. */
    unsetenv("LN_MAX_ISA");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_mask_is_expected),
        cmocka_unit_test(dispatch_picks_best),
        cmocka_unit_test(hints_are_expected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
