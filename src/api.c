/* api.c - the public entry points: validate, then one indirect call into the active kernels. */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

/* Bytes spanned by `rows` rows of `cols` floats, `ld` apart; 0 when it overflows. */
static size_t span_bytes(size_t rows, size_t cols, size_t ld)
{
    if (rows == 0 || cols == 0 || ld < cols || cols > SIZE_MAX / sizeof(float))
        return 0; /* the last test keeps the subtraction below from wrapping */
    if (rows - 1 > (SIZE_MAX / sizeof(float) - cols) / ld)
        return 0;
    return ((rows - 1) * ld + cols) * sizeof(float);
}

typedef struct span {
    const void *p;
    size_t bytes;
} span;

static int overlaps(span a, span b)
{
    if (!a.p || !b.p)
        return 0;
    const uintptr_t pa = (uintptr_t)a.p, pb = (uintptr_t)b.p;
    return pa < pb + b.bytes && pb < pa + a.bytes;
}

/* Any output overlapping an input or another output, except out[same_out] == in[same_in]
   exactly (in place) with equal strides, which the caller has already established. */
static int any_alias(const span *out, int nout, const span *in, int nin, int same_out,
                     int same_in)
{
    for (int o = 0; o < nout; o++) {
        for (int i = 0; i < nin; i++)
            if (overlaps(out[o], in[i]) && !(o == same_out && i == same_in))
                return 1;
        for (int p = o + 1; p < nout; p++)
            if (overlaps(out[o], out[p]))
                return 1;
    }
    return 0;
}

static int check_forward(const ln_fwd_args *a, size_t rows)
{
    if (!a->x || !a->y)
        return LN_ERR_NULL;
    const size_t xb = span_bytes(rows, a->cols, a->ldx), yb = span_bytes(rows, a->cols, a->ldy);
    const size_t vb = span_bytes(1, a->cols, a->cols), sb = span_bytes(1, rows, rows);
    if (!xb || !yb || !vb || !sb)
        return LN_ERR_SHAPE;
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return LN_ERR_EPS;
    const span in[] = {{a->x, xb}, {a->gamma, vb}, {a->beta, vb}};
    const span out[] = {{a->y, yb}, {a->mean, sb}, {a->rstd, sb}};
    const int in_place = (const void *)a->y == (const void *)a->x && a->ldy == a->ldx;
    if (any_alias(out, 3, in, 3, in_place ? 0 : -1, 0))
        return LN_ERR_ALIAS;
    return LN_OK;
}

static int check_backward(const ln_bwd_args *a, const float *dgamma, const float *dbeta,
                          size_t rows)
{
    if (!a->dy || !a->x || !a->mean || !a->rstd)
        return LN_ERR_NULL;
    const size_t dyb = span_bytes(rows, a->cols, a->lddy), xb = span_bytes(rows, a->cols, a->ldx);
    const size_t dxb = span_bytes(rows, a->cols, a->lddx);
    const size_t vb = span_bytes(1, a->cols, a->cols), sb = span_bytes(1, rows, rows);
    if (!dyb || !xb || !dxb || !vb || !sb)
        return LN_ERR_SHAPE;
    const span in[] = {{a->dy, dyb}, {a->x, xb}, {a->gamma, vb}, {a->mean, sb}, {a->rstd, sb}};
    const span out[] = {{a->dx, dxb}, {dgamma, vb}, {dbeta, vb}};
    const int in_place = (const void *)a->dx == (const void *)a->dy && a->lddx == a->lddy;
    if (any_alias(out, 3, in, 5, in_place ? 0 : -1, 0))
        return LN_ERR_ALIAS;
    return LN_OK;
}

LN_API int ln_forward_f32(const float *x, const float *gamma, const float *beta, float *y,
                          float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    if (rows == 0)
        return LN_OK;
    const ln_fwd_args a = {x, cols, gamma, beta, y, cols, mean, rstd, cols, eps};
    const int st = check_forward(&a, rows);
    if (st != LN_OK)
        return st;
    ln_active()->forward(&a, 0, rows);
    return LN_OK;
}

LN_API int ln_backward_f32(const float *dy, const float *x, const float *gamma,
                           const float *mean, const float *rstd, float *dx, float *dgamma,
                           float *dbeta, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    const ln_bwd_args a = {dy, cols, x, cols, gamma, mean, rstd, dx, cols, cols};
    const int st = check_backward(&a, dgamma, dbeta, rows);
    if (st != LN_OK)
        return st;
    return ln_backward_run(ln_active(), &a, rows, dgamma, dbeta);
}

LN_API const char *ln_status_string(int status)
{
    switch (status) {
    case LN_OK: return "success";
    case LN_ERR_NULL: return "a required pointer is NULL";
    case LN_ERR_SHAPE: return "invalid shape: cols is 0 or a size overflows";
    case LN_ERR_EPS: return "eps must be finite and >= 0";
    case LN_ERR_ALIAS: return "operands overlap in a way that is not allowed";
    case LN_ERR_ISA: return "unknown ISA, or not available on this CPU or build";
    case LN_ERR_NOMEM: return "out of memory";
    default: return "unknown status";
    }
}

LN_API unsigned ln_version(void)
{
    return LN_VERSION_MAJOR * 10000u + LN_VERSION_MINOR * 100u + LN_VERSION_PATCH;
}

LN_API const char *ln_version_string(void) { return LN_VERSION_STRING; }
