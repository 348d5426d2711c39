/* test_arm_isa.c - under qemu: the dispatcher runs the ISA the emulated CPU model implies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "layernorm.h"
#include "testutil.h"

/* LN_TEST_EXPECT_ISA and LN_TEST_MODEL_SVE come from tests/cmake/LnQemuTests.cmake: neon
   on a model without SVE, sve on the SVE models, the capped ISA where LN_MAX_ISA is set. */
static int expected_isa(void)
{
    const char *e = getenv("LN_TEST_EXPECT_ISA");
    return e ? tu_isa_from_name(e) : -1;
}

static void reports_the_model_isa(void **state)
{
    (void)state;
    const int want = expected_isa();
    assert_true(want >= 0);
    assert_int_equal(ln_get_isa(), want);
    /* What the model has, independent of any cap: SVE exactly on the SVE models. */
    const char *sve_model = getenv("LN_TEST_MODEL_SVE");
    assert_non_null(sve_model);
    assert_int_equal(ln_isa_available(LN_ISA_SVE), atoi(sve_model));
    assert_true(ln_isa_available(LN_ISA_NEON));
    assert_false(ln_isa_available(LN_ISA_AVX2));
    assert_false(ln_isa_available(LN_ISA_AVX512));
}

/* The cap forces every lower Arm path, and an unavailable ISA changes nothing. */
static void cap_forces_lower_paths(void **state)
{
    (void)state;
    const int before = ln_get_isa();
    assert_int_equal(ln_set_max_isa(LN_ISA_AVX2), LN_ERR_ISA);
    assert_int_equal(ln_get_isa(), before);
    assert_int_equal(ln_set_max_isa(LN_ISA_NEON), LN_OK);
    assert_int_equal(ln_get_isa(), LN_ISA_NEON);
    assert_int_equal(ln_set_max_isa(LN_ISA_SCALAR), LN_OK);
    assert_int_equal(ln_get_isa(), LN_ISA_SCALAR);
    if (ln_isa_available(LN_ISA_SVE)) {
        assert_int_equal(ln_set_max_isa(LN_ISA_SVE), LN_OK);
        assert_int_equal(ln_get_isa(), LN_ISA_SVE);
    } else {
        assert_int_equal(ln_set_max_isa(LN_ISA_SVE), LN_ERR_ISA);
        assert_int_equal(ln_get_isa(), LN_ISA_SCALAR);
    }
}

int main(void)
{
    if (expected_isa() < 0)
        return TU_SKIP; /* not under the qemu configurations: nothing to expect */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reports_the_model_isa),
        cmocka_unit_test(cap_forces_lower_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
