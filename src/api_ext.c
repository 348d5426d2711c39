/* api_ext.c - the bf16 LayerNorm and GELU entry points: validate, then one indirect call. */
#include <math.h>

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

/* The float entry points' checks (validate.c) on 2-byte rows, in the header's order:
   NULL, shape, eps, alias (y == x exactly allowed). */
static int check_bf16_fwd(const ln_bf16_fwd_args *a, size_t rows)
{
    if (!a->x || !a->y)
        return LN_ERR_NULL;
    const size_t n = a->cols, h = sizeof(uint16_t), f = sizeof(float);
    if (!ln_shape_ok(rows, n, a->ldx, h) || !ln_shape_ok(rows, n, a->ldy, h) ||
        !ln_shape_ok(1, n, n, f) || !ln_shape_ok(1, rows, rows, f))
        return LN_ERR_SHAPE;
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return LN_ERR_EPS;
    const ln_view in[] = {ln_view_of(a->x, rows, n, a->ldx, h), ln_view_of(a->gamma, 1, n, n, f),
                          ln_view_of(a->beta, 1, n, n, f)};
    const ln_view out[] = {ln_view_of(a->y, rows, n, a->ldy, h),
                           ln_view_of(a->mean, 1, rows, rows, f),
                           ln_view_of(a->rstd, 1, rows, rows, f)};
    return ln_any_alias(out, 3, in, 3, 1ull << LN_ALLOW_BIT(0, 0)) ? LN_ERR_ALIAS : LN_OK;
}

/* NULL, shape, alias (dx == dy exactly allowed), as ln_backward_f32. */
static int check_bf16_bwd(const ln_bf16_bwd_args *a, const float *dgamma, const float *dbeta,
                          size_t rows)
{
    if (!a->dy || !a->x || !a->mean || !a->rstd)
        return LN_ERR_NULL;
    const size_t n = a->cols, h = sizeof(uint16_t), f = sizeof(float);
    if (!ln_shape_ok(rows, n, a->lddy, h) || !ln_shape_ok(rows, n, a->ldx, h) ||
        !ln_shape_ok(rows, n, a->lddx, h) || !ln_shape_ok(1, n, n, f) ||
        !ln_shape_ok(1, rows, rows, f))
        return LN_ERR_SHAPE;
    const ln_view in[] = {ln_view_of(a->dy, rows, n, a->lddy, h),
                          ln_view_of(a->x, rows, n, a->ldx, h), ln_view_of(a->gamma, 1, n, n, f),
                          ln_view_of(a->mean, 1, rows, rows, f),
                          ln_view_of(a->rstd, 1, rows, rows, f)};
    const ln_view out[] = {ln_view_of(a->dx, rows, n, a->lddx, h), ln_view_of(dgamma, 1, n, n, f),
                           ln_view_of(dbeta, 1, n, n, f)};
    return ln_any_alias(out, 3, in, 5, 1ull << LN_ALLOW_BIT(0, 0)) ? LN_ERR_ALIAS : LN_OK;
}

LN_API int ln_forward_bf16(const uint16_t *x, const float *gamma, const float *beta, uint16_t *y,
                           float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    if (rows == 0)
        return LN_OK;
    const ln_bf16_fwd_args a = {x, cols, gamma, beta, y, cols, mean, rstd, cols, eps};
    const int st = check_bf16_fwd(&a, rows);
    if (st != LN_OK)
        return st;
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
                            const float *mean, const float *rstd, uint16_t *dx, float *dgamma,
                            float *dbeta, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    const ln_bf16_bwd_args a = {dy, cols, x, cols, gamma, mean, rstd, dx, cols, cols};
    const int st = check_bf16_bwd(&a, dgamma, dbeta, rows);
    if (st != LN_OK)
        return st;
    const bf16_ctx c = {bf16_active(), &a};
    return ln_backward_blocks(bf16_block, &c, rows, cols, 0, dgamma, dbeta);
}

/* NULL, shape, kind, alias: out may be x or in2 exactly (elementwise kernels read each
   element before writing it), never shifted against either. */
static int check_gelu(const float *x, const float *in2, const float *out, size_t n, int kind)
{
    if (!x || !out)
        return LN_ERR_NULL;
    if (!ln_shape_ok(1, n, n, sizeof(float)))
        return LN_ERR_SHAPE;
    if (kind != LN_GELU_TANH && kind != LN_GELU_ERF)
        return LN_ERR_KIND;
    const ln_view in[] = {ln_view_of(x, 1, n, n, sizeof(float)),
                          ln_view_of(in2, 1, n, n, sizeof(float))};
    const ln_view o = ln_view_of(out, 1, n, n, sizeof(float));
    const unsigned long long allowed = (1ull << LN_ALLOW_BIT(0, 0)) | (1ull << LN_ALLOW_BIT(0, 1));
    return ln_any_alias(&o, 1, in, 2, allowed) ? LN_ERR_ALIAS : LN_OK;
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
