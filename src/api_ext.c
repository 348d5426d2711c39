/* api_ext.c - the bf16 LayerNorm and GELU entry points: validate, then one indirect call. */
#include "ln_internal.h"

/* The active ISA's kernels for a feature; scalar when this build lacks that ISA's. */
static const ln_bf16_kernels *bf16_active(void)
{
    const ln_bf16_kernels *k = ln_bf16_for(ln_active()->isa);
    return k ? k : &ln_bf16_kernels_scalar;
}

static const ln_gelu_kernels *gelu_active(void)
{
    const ln_gelu_kernels *k = ln_gelu_for(ln_active()->isa);
    return k ? k : &ln_gelu_kernels_scalar;
}

LN_API int ln_forward_bf16(const uint16_t *x, const float *gamma, const float *beta,
                           uint16_t *y, float *mean, float *rstd, size_t rows, size_t cols,
                           float eps)
{
    if (rows == 0)
        return LN_OK;
    const int st = ln_check_fwd(x, cols, y, cols, sizeof(uint16_t), gamma, beta, mean, rstd,
                                rows, cols, eps);
    if (st != LN_OK)
        return st;
    const ln_bf16_fwd_args a = {x, cols, gamma, beta, y, cols, mean, rstd, cols, eps};
    bf16_active()->forward(&a, 0, rows);
    return LN_OK;
}

typedef struct bf16_ctx {
    const ln_bf16_kernels *k;
    const ln_bf16_bwd_args *a;
} bf16_ctx;

static void bf16_block(const void *ctx, size_t r0, size_t r1, float *dg, float *db)
{
    const bf16_ctx *c = ctx;
    c->k->backward(c->a, r0, r1, dg, db);
}

LN_API int ln_backward_bf16(const uint16_t *dy, const uint16_t *x, const float *gamma,
                            const float *mean, const float *rstd, uint16_t *dx,
                            float *dgamma, float *dbeta, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    const int st = ln_check_bwd(dy, cols, x, cols, dx, cols, sizeof(uint16_t), gamma, mean,
                                rstd, dgamma, dbeta, rows, cols);
    if (st != LN_OK)
        return st;
    const ln_bf16_bwd_args a = {dy, cols, x, cols, gamma, mean, rstd, dx, cols, cols};
    const bf16_ctx c = {bf16_active(), &a};
    return ln_backward_blocks(bf16_block, &c, rows, cols, dgamma, dbeta);
}

static int check_gelu(const float *x, const float *in2, const float *out, size_t n, int kind)
{
    if (!x || !out)
        return LN_ERR_NULL;
    const int st = ln_check_elementwise(x, in2, out, n);
    if (st == LN_ERR_SHAPE)
        return st;
    if (kind != LN_GELU_TANH && kind != LN_GELU_ERF)
        return LN_ERR_KIND;
    return st;
}

LN_API int ln_gelu_forward_f32(const float *x, float *y, size_t n, int kind)
{
    if (n == 0)
        return LN_OK;
    const int st = check_gelu(x, NULL, y, n, kind);
    if (st != LN_OK)
        return st;
    gelu_active()->forward(x, y, n, kind);
    return LN_OK;
}

LN_API int ln_gelu_backward_f32(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    if (n == 0)
        return LN_OK;
    if (!dy)
        return LN_ERR_NULL;
    const int st = check_gelu(x, dy, dx, n, kind);
    if (st != LN_OK)
        return st;
    gelu_active()->backward(dy, x, dx, n, kind);
    return LN_OK;
}
