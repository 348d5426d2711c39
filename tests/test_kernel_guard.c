/* test_kernel_guard.c - no kernel touches a byte outside its rows: PROT_NONE on both sides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kcheck.h"
#include "testutil.h"

static const ln_kernels *K;

enum { X, G, B, Y, M, R, DY, DX, DG, DB, NBUF };

/* Every operand in its own mapping, flush against a PROT_NONE page after its end
   (at_end) or before its start; an access outside faults and kills the test. Results
   must also equal the kernel's on ordinary memory, so the guarded run did real work. */
static void guarded_run(size_t rows, size_t cols, int at_end, tu_rng *rng)
{
    const size_t sizes[NBUF] = {rows * cols, cols, cols, rows * cols, rows, rows,
                                rows * cols, rows * cols, cols, cols};
    tu_guard gd[NBUF];
    float *p[NBUF], *q[NBUF];
    for (int i = 0; i < NBUF; i++) {
        p[i] = tu_guard_alloc(&gd[i], sizes[i], at_end);
        assert_non_null(p[i]);
        q[i] = kc_alloc(sizes[i]);
    }
    tu_fill_normal(rng, p[X], sizes[X], 1.0, 2.0);
    tu_fill_normal(rng, p[G], cols, 0.0, 1.0);
    tu_fill_normal(rng, p[B], cols, 0.0, 1.0);
    tu_fill_normal(rng, p[DY], sizes[DY], 0.0, 1.0);
    for (int i = 0; i < NBUF; i++)
        memcpy(q[i], p[i], sizes[i] * sizeof(float));

    kc_forward(K, p[X], p[G], p[B], p[Y], p[M], p[R], rows, cols, 1e-5f);
    kc_forward(K, q[X], q[G], q[B], q[Y], q[M], q[R], rows, cols, 1e-5f);
    kc_backward(K, p[DY], p[X], p[G], p[M], p[R], p[DX], p[DG], p[DB], rows, cols);
    kc_backward(K, q[DY], q[X], q[G], q[M], q[R], q[DX], q[DG], q[DB], rows, cols);
    for (int i = Y; i < NBUF; i++)
        assert_true(kc_same_bits(p[i], q[i], sizes[i]));

    /* In place, both directions, in the guarded buffers. */
    kc_forward(K, p[X], NULL, NULL, p[X], NULL, NULL, rows, cols, 1e-5f);
    kc_backward(K, p[DY], p[Y], NULL, p[M], p[R], p[DY], NULL, NULL, rows, cols);
    for (int i = 0; i < NBUF; i++) {
        tu_guard_free(&gd[i]);
        free(q[i]);
    }
}

static void both_sides_every_cols(void **state)
{
    (void)state;
    tu_rng rng = {21};
    const size_t max_cols = kc_quick() ? 40 : 80;
    for (size_t cols = 1; cols <= max_cols; cols++)
        for (size_t rows = 1; rows <= 3; rows++) {
            guarded_run(rows, cols, 1, &rng);
            guarded_run(rows, cols, 0, &rng);
        }
    guarded_run(70, 33, 1, &rng); /* several backward blocks */
    guarded_run(2, 1601, 1, &rng);
}

int main(int argc, char **argv)
{
    K = kc_kernel_from_args(argc, argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(both_sides_every_cols)};
    return cmocka_run_group_tests_name(K->name, tests, NULL, NULL);
}
