/* bf16_kernel.h - the row loop every SIMD bf16 backward shares (each ISA supplies one row). */
#ifndef LN_BF16_KERNEL_H
#define LN_BF16_KERNEL_H

#include "ln_internal.h"

typedef void (*ln_bf16_row_fn)(const ln_bf16_bwd_args *a, size_t r, float *dgamma, float *dbeta);

/* Partials start at +0 so an all-zero sum is +0 (cols == 1 gives dgamma == +0), then the
   rows add to them in row order: the summation order the oracle uses. Static inline with
   a constant `row`, so the compiler inlines the row into each ISA's own file. */
static inline void ln_bf16_backward_rows(const ln_bf16_bwd_args *a, size_t r0, size_t r1,
                                         float *dgamma, float *dbeta, ln_bf16_row_fn row)
{
    for (size_t j = 0; j < a->cols; j++) {
        if (dgamma)
            dgamma[j] = 0.0f;
        if (dbeta)
            dbeta[j] = 0.0f;
    }
    for (size_t r = r0; r < r1; r++)
        row(a, r, dgamma, dbeta);
}

#endif
