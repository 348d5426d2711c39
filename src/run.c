/* run.c - drives a kernel over all rows: threads or not, backward's blocks and their fold. */
#include <stdlib.h>

#include "ln_threads.h"

void ln_forward_run(const ln_kernels *k, const ln_fwd_args *a, size_t rows)
{
    const int t = ln_threads_for(rows * a->cols, LN_THREAD_MIN_FWD, rows);
    if (t > 1)
        ln_forward_threads(k, a, rows, t);
    else
        k->forward(a, 0, rows);
}

int ln_backward_blocks(ln_bwd_block_fn block, const void *ctx, size_t rows, size_t n,
                       int accumulate, float *dgamma, float *dbeta)
{
    /* One block (or no parameter gradients): the kernel's partials are the result. That
       equals the general path bit for bit: (float)(0.0 + (double)p) == p. */
    if ((!dgamma && !dbeta) || (rows <= LN_BWD_BLOCK && !accumulate)) {
        block(ctx, 0, rows, dgamma, dbeta);
        return LN_OK;
    }
    /* Double accumulators: the fold adds rows/64 partials per column, and double keeps
       that rounding far below the float partials' own. */
    double *acc = calloc(2 * n, sizeof(double) + sizeof(float));
    if (!acc)
        return LN_ERR_NOMEM;
    float *part = (float *)(acc + 2 * n);
    for (size_t r0 = 0; r0 < rows; r0 += LN_BWD_BLOCK) {
        const size_t r1 = rows - r0 < LN_BWD_BLOCK ? rows : r0 + LN_BWD_BLOCK;
        block(ctx, r0, r1, dgamma ? part : NULL, dbeta ? part + n : NULL);
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

typedef struct f32_ctx {
    const ln_kernels *k;
    const ln_bwd_args *a;
} f32_ctx;

static void f32_block(const void *ctx, size_t r0, size_t r1, float *dg, float *db)
{
    const f32_ctx *c = ctx;
    c->k->backward(c->a, r0, r1, dg, db);
}

int ln_backward_run(const ln_kernels *k, const ln_bwd_args *a, size_t rows, float *dgamma,
                    float *dbeta)
{
    /* Threads need every block's partials at once; if that memory cannot be had, the one
       thread below computes the same bits with one block's worth. */
    const size_t blocks = rows / LN_BWD_BLOCK + (rows % LN_BWD_BLOCK != 0);
    const int t = ln_threads_for(rows * a->cols, LN_THREAD_MIN_BWD, blocks);
    if (t > 1 && ln_backward_threads(k, a, rows, dgamma, dbeta, t) == LN_OK)
        return LN_OK;
    const f32_ctx c = {k, a};
    return ln_backward_blocks(f32_block, &c, rows, a->cols, (a->flags & LN_FLAG_ACCUMULATE) != 0,
                              dgamma, dbeta);
}
