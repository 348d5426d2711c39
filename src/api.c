/* api.c - the public entry points: validate, then one indirect call into the active kernels. */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

/* Bytes spanned by `rows` rows of `cols` elements of `elem` bytes, `ld` apart; 0 when it
   overflows. */
static size_t span_bytes(size_t rows, size_t cols, size_t ld, size_t elem)
{
    if (rows == 0 || cols == 0 || ld < cols)
        return 0;
    /* cols first: SIZE_MAX / elem - cols would wrap for a huge cols with rows == 1 */
    if (cols > SIZE_MAX / elem || rows - 1 > (SIZE_MAX / elem - cols) / ld)
        return 0;
    return ((rows - 1) * ld + cols) * elem;
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

int ln_check_fwd(const void *x, size_t ldx, const void *y, size_t ldy, size_t elem,
                 const float *gamma, const float *beta, const float *mean, const float *rstd,
                 size_t rows, size_t cols, float eps)
{
    if (!x || !y)
        return LN_ERR_NULL;
    const size_t xb = span_bytes(rows, cols, ldx, elem), yb = span_bytes(rows, cols, ldy, elem);
    const size_t vb = span_bytes(1, cols, cols, sizeof(float));
    const size_t sb = span_bytes(1, rows, rows, sizeof(float));
    if (!xb || !yb || !vb || !sb)
        return LN_ERR_SHAPE;
    if (!(eps >= 0.0f) || isinf(eps))
        return LN_ERR_EPS;
    const span in[] = {{x, xb}, {gamma, vb}, {beta, vb}};
    const span out[] = {{y, yb}, {mean, sb}, {rstd, sb}};
    const int in_place = y == x && ldy == ldx;
    if (any_alias(out, 3, in, 3, in_place ? 0 : -1, 0))
        return LN_ERR_ALIAS;
    return LN_OK;
}

int ln_check_bwd(const void *dy, size_t lddy, const void *x, size_t ldx, const void *dx,
                 size_t lddx, size_t elem, const float *gamma, const float *mean,
                 const float *rstd, const float *dgamma, const float *dbeta, size_t rows,
                 size_t cols)
{
    if (!dy || !x || !mean || !rstd)
        return LN_ERR_NULL;
    const size_t dyb = span_bytes(rows, cols, lddy, elem), xb = span_bytes(rows, cols, ldx, elem);
    const size_t dxb = span_bytes(rows, cols, lddx, elem);
    const size_t vb = span_bytes(1, cols, cols, sizeof(float));
    const size_t sb = span_bytes(1, rows, rows, sizeof(float));
    if (!dyb || !xb || !dxb || !vb || !sb)
        return LN_ERR_SHAPE;
    const span in[] = {{dy, dyb}, {x, xb}, {gamma, vb}, {mean, sb}, {rstd, sb}};
    const span out[] = {{dx, dxb}, {dgamma, vb}, {dbeta, vb}};
    const int in_place = dx == dy && lddx == lddy;
    if (any_alias(out, 3, in, 5, in_place ? 0 : -1, 0))
        return LN_ERR_ALIAS;
    return LN_OK;
}

int ln_check_elementwise(const float *x, const float *in2, const float *out, size_t n)
{
    const size_t b = span_bytes(1, n, n, sizeof(float));
    if (!b)
        return LN_ERR_SHAPE;
    const span in[] = {{x, b}, {in2, b}};
    const span o = {out, b};
    /* Elementwise kernels read each element before writing it, so exact in place is safe
       against either input; a shifted overlap is not. */
    for (int i = 0; i < 2; i++)
        if (overlaps(o, in[i]) && out != (const float *)in[i].p)
            return LN_ERR_ALIAS;
    return LN_OK;
}

LN_API int ln_forward_f32(const float *x, const float *gamma, const float *beta, float *y,
                          float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    if (rows == 0)
        return LN_OK;
    const int st = ln_check_fwd(x, cols, y, cols, sizeof(float), gamma, beta, mean, rstd,
                                rows, cols, eps);
    if (st != LN_OK)
        return st;
    const ln_fwd_args a = {x, cols, gamma, beta, y, cols, mean, rstd, cols, eps};
    ln_active()->forward(&a, 0, rows);
    return LN_OK;
}

LN_API int ln_backward_f32(const float *dy, const float *x, const float *gamma,
                           const float *mean, const float *rstd, float *dx, float *dgamma,
                           float *dbeta, size_t rows, size_t cols)
{
    if (rows == 0)
        return LN_OK;
    const int st = ln_check_bwd(dy, cols, x, cols, dx, cols, sizeof(float), gamma, mean, rstd,
                                dgamma, dbeta, rows, cols);
    if (st != LN_OK)
        return st;
    const ln_bwd_args a = {dy, cols, x, cols, gamma, mean, rstd, dx, cols, cols};
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
    case LN_ERR_KIND: return "unknown kind (e.g. GELU variant)";
    default: return "unknown status";
    }
}

LN_API unsigned ln_version(void)
{
    return LN_VERSION_MAJOR * 10000u + LN_VERSION_MINOR * 100u + LN_VERSION_PATCH;
}

LN_API const char *ln_version_string(void) { return LN_VERSION_STRING; }
