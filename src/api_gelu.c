/* api_gelu.c - the GELU entry points: validate, then hand over to the runner. */
#include "ln_internal.h"

/* GELU's operands: x, and dy for the backward (else NULL), in; out. */
typedef struct gelu_ops {
    const float *x, *in2, *out;
} gelu_ops;

LN_VIEWS_FN void gelu_views(const void *ctx, size_t n, ln_view *out, ln_view *in)
{
    const gelu_ops *g = ctx;
    in[0] = ln_view_of(g->x, 1, n, n, sizeof(float));
    in[1] = ln_view_of(g->in2, 1, n, n, sizeof(float));
    out[0] = ln_view_of(g->out, 1, n, n, sizeof(float));
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
    const gelu_ops g = {x, in2, out};
    const unsigned long long allowed = (1ull << LN_ALLOW_BIT(0, 0)) | (1ull << LN_ALLOW_BIT(0, 1));
    return ln_any_alias(gelu_views, &g, n, 1, 2, allowed) ? LN_ERR_ALIAS : LN_OK;
}

LN_API int ln_gelu_forward_f32(const float *x, float *y, size_t n, int kind)
{
    if (n == 0)
        return LN_OK;
    const int st = check_gelu(x, NULL, y, n, kind);
    if (st != LN_OK)
        return st;
    ln_gelu_forward_run(ln_active(), x, y, n, kind);
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
    ln_gelu_backward_run(ln_active(), dy, x, dx, n, kind);
    return LN_OK;
}
