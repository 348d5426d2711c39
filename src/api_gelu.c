/* api_gelu.c - the GELU entry points: validate, then hand over to the runner. */
#include "ln_internal.h"

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
