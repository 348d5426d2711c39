/* api_bf16.c - the bf16 LayerNorm entry points: validate, then hand over to the runner. */
#include <math.h>

#include "ln_internal.h"

LN_VIEWS_FN void fwd_views(const void *ctx, size_t rows, ln_view *out, ln_view *in)
{
    const ln_bf16_fwd_args *a = ctx;
    const size_t n = a->cols, h = sizeof(uint16_t), f = sizeof(float);
    in[0] = ln_view_of(a->x, rows, n, a->ldx, h);
    in[1] = ln_view_of(a->gamma, 1, n, n, f);
    in[2] = ln_view_of(a->beta, 1, n, n, f);
    out[0] = ln_view_of(a->y, rows, n, a->ldy, h);
    out[1] = ln_view_of(a->mean, 1, rows, rows, f);
    out[2] = ln_view_of(a->rstd, 1, rows, rows, f);
}

/* The backward's operands beside its arguments: the parameter gradients. */
typedef struct bwd_ctx {
    const ln_bf16_bwd_args *a;
    const float *dgamma, *dbeta;
} bwd_ctx;

LN_VIEWS_FN void bwd_views(const void *ctx, size_t rows, ln_view *out, ln_view *in)
{
    const bwd_ctx *c = ctx;
    const ln_bf16_bwd_args *a = c->a;
    const size_t n = a->cols, h = sizeof(uint16_t), f = sizeof(float);
    in[0] = ln_view_of(a->dy, rows, n, a->lddy, h);
    in[1] = ln_view_of(a->x, rows, n, a->ldx, h);
    in[2] = ln_view_of(a->gamma, 1, n, n, f);
    in[3] = ln_view_of(a->mean, 1, rows, rows, f);
    in[4] = ln_view_of(a->rstd, 1, rows, rows, f);
    out[0] = ln_view_of(a->dx, rows, n, a->lddx, h);
    out[1] = ln_view_of(c->dgamma, 1, n, n, f);
    out[2] = ln_view_of(c->dbeta, 1, n, n, f);
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
    const unsigned long long allowed = 1ull << LN_ALLOW_BIT(0, 0);
    return ln_any_alias(fwd_views, a, rows, 3, 3, allowed) ? LN_ERR_ALIAS : LN_OK;
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
    const bwd_ctx c = {a, dgamma, dbeta};
    const unsigned long long allowed = 1ull << LN_ALLOW_BIT(0, 0);
    return ln_any_alias(bwd_views, &c, rows, 3, 5, allowed) ? LN_ERR_ALIAS : LN_OK;
}

LN_API int ln_forward_bf16(const uint16_t *x, const float *gamma, const float *beta, uint16_t *y,
                           float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    if (rows == 0)
        return LN_OK;
    const ln_bf16_fwd_args a = {x, cols, gamma, beta, y, cols, mean, rstd, cols, eps, 0};
    const int st = check_bf16_fwd(&a, rows);
    if (st != LN_OK)
        return st;
    ln_bf16_forward_run(ln_active(), &a, rows);
    return LN_OK;
}

LN_API int ln_backward_bf16(const uint16_t *dy, const uint16_t *x, const float *gamma,
                            const float *mean, const float *rstd, uint16_t *dx, float *dgamma,
                            float *dbeta, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    const ln_bf16_bwd_args a = {dy, cols, x, cols, gamma, mean, rstd, dx, cols, cols, 0, 0};
    const int st = check_bf16_bwd(&a, dgamma, dbeta, rows);
    if (st != LN_OK)
        return st;
    return ln_bf16_backward_run(ln_active(), &a, rows, dgamma, dbeta);
}
