/* run.c - the runner: a validated call over all rows, blocks or elements, threaded or not. */
#include <stdlib.h>

#include "ln_threads.h"

/* What the callbacks below read of one call: the record and the operation's arguments. */
typedef struct call {
    const ln_kernels *k;
    const void *args;
} call;

/* GELU's operands; dy is NULL for the forward. */
typedef struct gelu_args {
    const float *dy, *x;
    float *out;
    int kind;
} gelu_args;

static void f32_rows(const void *ctx, size_t r0, size_t r1)
{
    const call *c = ctx;
    c->k->forward(c->args, r0, r1);
}

static void bf16_rows(const void *ctx, size_t r0, size_t r1)
{
    const call *c = ctx;
    c->k->bf16_forward(c->args, r0, r1);
}

static void f32_block(const void *ctx, size_t r0, size_t r1, float *dg, float *db)
{
    const call *c = ctx;
    c->k->backward(c->args, r0, r1, dg, db);
}

static void bf16_block(const void *ctx, size_t r0, size_t r1, float *dg, float *db)
{
    const call *c = ctx;
    c->k->bf16_backward(c->args, r0, r1, dg, db);
}

static void gelu_fwd_chunk(const void *ctx, size_t i0, size_t i1)
{
    const call *c = ctx;
    const gelu_args *g = c->args;
    c->k->gelu_forward(g->x + i0, g->out + i0, i1 - i0, g->kind);
}

static void gelu_bwd_chunk(const void *ctx, size_t i0, size_t i1)
{
    const call *c = ctx;
    const gelu_args *g = c->args;
    c->k->gelu_backward(g->dy + i0, g->x + i0, g->out + i0, i1 - i0, g->kind);
}

/* One thread's backward: blocks in order, each block's partials added to double
   accumulators in block order, the caller's values added once after the fold. */
static int blocks_one_thread(ln_block_fn block, const void *ctx, size_t rows, size_t n,
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
    const size_t ps = ln_part_stride(n);
    void *mem = calloc(1, 2 * ps * sizeof(float) + 2 * n * sizeof(double) + LN_PART_SLACK);
    if (!mem)
        return LN_ERR_NOMEM;
    float *part = ln_part_base(mem);
    double *acc = (double *)(part + 2 * ps);
    for (size_t r0 = 0; r0 < rows; r0 += LN_BWD_BLOCK) {
        const size_t r1 = rows - r0 < LN_BWD_BLOCK ? rows : r0 + LN_BWD_BLOCK;
        block(ctx, r0, r1, dgamma ? part : NULL, dbeta ? part + ps : NULL);
        for (size_t j = 0; j < n; j++) {
            acc[j] += (double)part[j];
            acc[n + j] += (double)part[ps + j];
        }
    }
    /* Accumulation adds the caller's value once, after the fold: one rounding, and the
       same bits however the rows were blocked. */
    for (size_t j = 0; j < n; j++) {
        if (dgamma)
            dgamma[j] = (float)(acc[j] + (accumulate ? (double)dgamma[j] : 0.0));
        if (dbeta)
            dbeta[j] = (float)(acc[n + j] + (accumulate ? (double)dbeta[j] : 0.0));
    }
    free(mem);
    return LN_OK;
}

/* Threads need every block's partials at once; if that memory cannot be had, one thread
   computes the same bits with one block's worth. */
static int run_blocks(ln_block_fn block, const call *c, size_t rows, size_t cols,
                      int accumulate, float *dgamma, float *dbeta, size_t min_work)
{
    const size_t blocks = rows / LN_BWD_BLOCK + (rows % LN_BWD_BLOCK != 0);
    const int t = ln_threads_for(rows * cols, min_work, blocks);
    if (t > 1 && ln_threads_blocks(block, c, rows, cols, accumulate, dgamma, dbeta, t) == LN_OK)
        return LN_OK;
    return blocks_one_thread(block, c, rows, cols, accumulate, dgamma, dbeta);
}

/* An accumulating call of one block: the kernel adds its partials to the caller's
   dgamma/dbeta (args.acc_dg), in float, into scratch it may leave unfinished. Those are
   the general path's bits: there (float)(0.0 + (double)p + (double)d), and rounding the
   sum of two floats to double and then to float gives the float sum, because
   53 >= 2 * 24 + 2 (Figueroa, "When is double rounding innocuous?", 1995); the double
   sum cannot overflow where the float one would not round to Inf as well. The scratch is
   malloc'ed, not calloc'ed: the kernel writes every partial it reads. */
static int accumulate_one_block(const ln_kernels *k, const ln_bwd_args *a, size_t rows,
                                float *dgamma, float *dbeta)
{
    const size_t ps = ln_part_stride(a->cols);
    void *mem = malloc(2 * ps * sizeof(float) + LN_PART_SLACK);
    if (!mem)
        return LN_ERR_NOMEM;
    float *part = ln_part_base(mem);
    ln_bwd_args fa = *a;
    fa.acc_dg = dgamma;
    fa.acc_db = dbeta;
    k->backward(&fa, 0, rows, dgamma ? part : NULL, dbeta ? part + ps : NULL);
    free(mem);
    return LN_OK;
}

/* Kernels get args.nt set when `bytes`, all the rows a call reads and writes, are at least
   ln_nt_bytes: a copy of the arguments, so small calls pay one compare. The f32 kernels
   then stream their outputs, prefetch their cold rows and keep the row-by-row apply
   (kernels/ln_forward.h), and the backward prefetches the rows its next groups read
   (kernels/ln_common.h), up to the call's last row (pf_rows, set here for backward:
   its kernel calls are 64-row blocks). bf16 kernels stream y, and on AVX-512 dx, where
   the element files allow. */
#define WITH_NT(T, a, bytes, extra)                                                       \
    T nt_args_;                                                                           \
    if ((bytes) >= ln_nt_bytes()) {                                                       \
        nt_args_ = *(a);                                                                  \
        nt_args_.nt = ln_nt_mode();                                                       \
        extra;                                                                            \
        (a) = &nt_args_;                                                                  \
    }

/* A backward call's status, after the calling thread's streamed dx (when the call
   streamed: args.nt) is fenced (ln_stream_fence; team members fence their own). */
static int fenced(int status, unsigned nt)
{
    if (nt)
        ln_stream_fence();
    return status;
}

/* The one-thread paths below call the kernel directly: the default costs one load and
   one branch over the kernel call. */
void ln_forward_run(const ln_kernels *k, const ln_fwd_args *a, size_t rows)
{
    /* x and y, and the fused add's residual and sum (rows of x's stride). */
    const size_t lds = a->ldx * ((a->residual != NULL) + (a->sum != NULL));
    WITH_NT(ln_fwd_args, a, rows * (a->ldx + a->ldy + lds) * sizeof(float), (void)0)
    const int t = ln_threads_for(rows * a->cols, LN_THREAD_MIN_FWD, rows);
    if (t > 1) {
        const call c = {k, a};
        ln_threads_ranges(f32_rows, &c, rows, 1, t);
    } else {
        k->forward(a, 0, rows);
    }
}

int ln_backward_run(const ln_kernels *k, const ln_bwd_args *a, size_t rows, float *dgamma,
                    float *dbeta)
{
    WITH_NT(ln_bwd_args, a, rows * (a->lddy + a->ldx + (a->dx ? a->lddx : 0)) * sizeof(float),
            nt_args_.pf_rows = rows)
    const int accumulate = (a->flags & LN_FLAG_ACCUMULATE) != 0;
    if (accumulate && rows <= LN_BWD_BLOCK && (dgamma || dbeta))
        return accumulate_one_block(k, a, rows, dgamma, dbeta); /* dx not streamed */
    const call c = {k, a};
    return fenced(run_blocks(f32_block, &c, rows, a->cols, accumulate, dgamma, dbeta,
                             LN_THREAD_MIN_BWD),
                  a->nt);
}

void ln_bf16_forward_run(const ln_kernels *k, const ln_bf16_fwd_args *a, size_t rows)
{
    WITH_NT(ln_bf16_fwd_args, a, rows * (a->ldx + a->ldy) * sizeof(uint16_t), (void)0)
    const int t = ln_threads_for(rows * a->cols, LN_THREAD_MIN_BF16_FWD, rows);
    if (t > 1) {
        const call c = {k, a};
        ln_threads_ranges(bf16_rows, &c, rows, 1, t);
    } else {
        k->bf16_forward(a, 0, rows);
    }
}

int ln_bf16_backward_run(const ln_kernels *k, const ln_bf16_bwd_args *a, size_t rows,
                         float *dgamma, float *dbeta)
{
    WITH_NT(ln_bf16_bwd_args, a, rows * (a->lddy + a->ldx + (a->dx ? a->lddx : 0)) * sizeof(uint16_t),
            nt_args_.pf_rows = rows)
    const call c = {k, a};
    return fenced(run_blocks(bf16_block, &c, rows, a->cols, 0, dgamma, dbeta,
                             LN_THREAD_MIN_BF16_BWD),
                  a->nt);
}

static size_t gelu_chunks(size_t n) { return n / LN_GELU_CHUNK + (n % LN_GELU_CHUNK != 0); }

/* The forward's kind with LN_GELU_NT when x and y (n floats each) reach ln_nt_bytes, the
   rule of the LayerNorm calls: x86 kernels then stream y (kernels/gelu_body.h; the
   backward gained nothing from streaming and is not asked to). */
static int gelu_kind(int kind, size_t n)
{
    return 2 * n * sizeof(float) >= ln_nt_bytes() ? kind | LN_GELU_NT : kind;
}

void ln_gelu_forward_run(const ln_kernels *k, const float *x, float *y, size_t n, int kind)
{
    kind = gelu_kind(kind, n);
    const int t = ln_threads_for(n, LN_THREAD_MIN_GELU, gelu_chunks(n));
    if (t > 1) {
        const gelu_args g = {NULL, x, y, kind};
        const call c = {k, &g};
        ln_threads_ranges(gelu_fwd_chunk, &c, n, LN_GELU_CHUNK, t);
    } else {
        k->gelu_forward(x, y, n, kind);
    }
}

void ln_gelu_backward_run(const ln_kernels *k, const float *dy, const float *x, float *dx,
                          size_t n, int kind)
{
    const int t = ln_threads_for(n, LN_THREAD_MIN_GELU, gelu_chunks(n));
    if (t > 1) {
        const gelu_args g = {dy, x, dx, kind};
        const call c = {k, &g};
        ln_threads_ranges(gelu_bwd_chunk, &c, n, LN_GELU_CHUNK, t);
    } else {
        k->gelu_backward(dy, x, dx, n, kind);
    }
}
