/* run.c - drives a kernel over all rows: backward's row blocks and their fixed-order fold. */
#include <stdlib.h>

#include "ln_internal.h"

int ln_backward_run(const ln_kernels *k, const ln_bwd_args *a, size_t rows, float *dgamma,
                    float *dbeta)
{
    const int accumulate = (a->flags & LN_FLAG_ACCUMULATE) != 0;
    /* One block (or no parameter gradients): the kernel's partials are the result. That
       equals the general path bit for bit: (float)(0.0 + (double)p) == p. */
    if ((!dgamma && !dbeta) || (rows <= LN_BWD_BLOCK && !accumulate)) {
        k->backward(a, 0, rows, dgamma, dbeta);
        return LN_OK;
    }
    const size_t n = a->cols;
    /* Double accumulators: the fold adds rows/64 partials per column, and double keeps
       that rounding far below the float partials' own. */
    double *acc = calloc(2 * n, sizeof(double) + sizeof(float));
    if (!acc)
        return LN_ERR_NOMEM;
    float *part = (float *)(acc + 2 * n);
    for (size_t r0 = 0; r0 < rows; r0 += LN_BWD_BLOCK) {
        const size_t r1 = rows - r0 < LN_BWD_BLOCK ? rows : r0 + LN_BWD_BLOCK;
        k->backward(a, r0, r1, dgamma ? part : NULL, dbeta ? part + n : NULL);
        for (size_t j = 0; j < 2 * n; j++)
            acc[j] += (double)part[j];
    }
    /* Accumulation adds the caller's value once, after the fold: one rounding, and the
       same bits however the rows were blocked. */
    for (size_t j = 0; j < n; j++) {
        if (dgamma)
            dgamma[j] = (float)(acc[j] + (accumulate ? (double)dgamma[j] : 0.0));
        if (dbeta)
            dbeta[j] = (float)(acc[n + j] + (accumulate ? (double)dbeta[j] : 0.0));
    }
    free(acc);
    return LN_OK;
}
