/* test_dispatch_ext.c - which bf16 and GELU tables each ISA id dispatches, emulated builds included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ln_internal.h"
#include "testutil.h"

/*
 * An emulated AVX-512 build reports AVX-512 on any x86-64 CPU, and only its f32 kernel is
 * emulated: the bf16 and GELU tables it dispatches for that id must be ones that run on
 * any CPU (the scalar tables), never the -mavx512f kernels. A machine with AVX-512 would
 * not notice the difference by running them, so the tables are compared by address.
 */
static void avx512_id_gets_runnable_tables(void **state)
{
    (void)state;
    const ln_bf16_kernels *b = ln_bf16_for(LN_ISA_AVX512);
    const ln_gelu_kernels *g = ln_gelu_for(LN_ISA_AVX512);
#if LN_EMULATED_AVX512
    assert_ptr_equal(b, &ln_bf16_kernels_scalar);
    assert_ptr_equal(g, &ln_gelu_kernels_scalar);
    printf("emulated AVX-512 build: bf16 '%s' and the scalar GELU for the avx512 id\n", b->name);
#elif LN_HAVE_EXT_AVX512
    if (ln_cpu_isa_mask() & (1u << LN_ISA_AVX512)) {
        assert_true(b == &ln_bf16_kernels_avx512 || b == &ln_bf16_kernels_avx512bf16);
        assert_ptr_equal(g, &ln_gelu_kernels_avx512);
    } else {
        assert_true(b == NULL && g == NULL);
    }
#else
    assert_true(b == NULL && g == NULL);
#endif
}

/* Scalar always has its tables; an id the CPU cannot run has none. */
static void unrunnable_ids_get_no_table(void **state)
{
    (void)state;
    const unsigned mask = ln_cpu_isa_mask() | 1u << LN_ISA_SCALAR;
    assert_ptr_equal(ln_bf16_for(LN_ISA_SCALAR), &ln_bf16_kernels_scalar);
    assert_ptr_equal(ln_gelu_for(LN_ISA_SCALAR), &ln_gelu_kernels_scalar);
    for (int isa = LN_ISA_SCALAR; isa <= LN_ISA_SVE; isa++)
        if (!(mask >> isa & 1u))
            assert_true(ln_bf16_for(isa) == NULL && ln_gelu_for(isa) == NULL);
    assert_null(ln_bf16_for(-1));
    assert_null(ln_gelu_for(LN_ISA_SVE + 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(avx512_id_gets_runnable_tables),
        cmocka_unit_test(unrunnable_ids_get_no_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
