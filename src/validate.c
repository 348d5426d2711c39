/* validate.c - argument checks shared by every entry point: shapes, flags, exact overlaps. */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

ln_view ln_view_of(const void *p, size_t rows, size_t cols, size_t ld, size_t elem)
{
    const ln_view v = {p, rows, cols * elem, ld * elem};
    return v;
}

int ln_shape_ok(size_t rows, size_t cols, size_t ld, size_t elem)
{
    if (rows == 0 || cols == 0 || ld < cols || elem == 0)
        return 0;
    /* (rows - 1) * ld + cols elements, times elem bytes, must fit in size_t. */
    const size_t max_elems = SIZE_MAX / elem;
    return cols <= max_elems && rows - 1 <= (max_elems - cols) / ld;
}

/* Rows of each view are disjoint and ascending (stride >= bytes), so one merge-like sweep
   over both finds any pair of rows sharing a byte: O(rows), and only when the views'
   hulls overlap, which valid calls reach only for interleaved views of one buffer. */
int ln_views_overlap(ln_view a, ln_view b)
{
    if (!a.p || !b.p || !a.rows || !b.rows || !a.bytes || !b.bytes)
        return 0;
    const uintptr_t pa = (uintptr_t)a.p, pb = (uintptr_t)b.p;
    const uintptr_t ea = pa + (a.rows - 1) * a.stride + a.bytes;
    const uintptr_t eb = pb + (b.rows - 1) * b.stride + b.bytes;
    if (ea <= pb || eb <= pa)
        return 0;
    size_t i = 0, j = 0;
    while (i < a.rows && j < b.rows) {
        const uintptr_t a0 = pa + i * a.stride, a1 = a0 + a.bytes;
        const uintptr_t b0 = pb + j * b.stride, b1 = b0 + b.bytes;
        if (a0 < b1 && b0 < a1)
            return 1;
        if (a1 <= b1)
            i++;
        else
            j++;
    }
    return 0;
}

static int same_view(ln_view a, ln_view b)
{
    return a.p == b.p && a.rows == b.rows && a.bytes == b.bytes && a.stride == b.stride;
}

int ln_any_alias(const ln_view *out, int nout, const ln_view *in, int nin,
                 unsigned long long allowed)
{
    for (int o = 0; o < nout; o++) {
        for (int i = 0; i < nin; i++) {
            const int exempt = ((allowed >> LN_ALLOW_BIT(o, i)) & 1u) && same_view(out[o], in[i]);
            if (!exempt && ln_views_overlap(out[o], in[i]))
                return 1;
        }
        for (int p = o + 1; p < nout; p++)
            if (ln_views_overlap(out[o], out[p]))
                return 1;
    }
    return 0;
}

int ln_check_forward(const ln_fwd_args *a, size_t rows, unsigned allowed_flags)
{
    if (!a->x || !a->y)
        return LN_ERR_NULL;
    if (!ln_shape_ok(rows, a->cols, a->ldx, sizeof(float)) ||
        !ln_shape_ok(rows, a->cols, a->ldy, sizeof(float)))
        return LN_ERR_SHAPE;
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return LN_ERR_EPS;
    if (a->flags & ~allowed_flags)
        return LN_ERR_FLAGS;
    const size_t n = a->cols, f = sizeof(float);
    const ln_view in[] = {ln_view_of(a->x, rows, n, a->ldx, f), ln_view_of(a->gamma, 1, n, n, f),
                          ln_view_of(a->beta, 1, n, n, f),
                          ln_view_of(a->residual, rows, n, a->ldx, f)};
    const ln_view out[] = {ln_view_of(a->y, rows, n, a->ldy, f), ln_view_of(a->mean, 1, rows, rows, f),
                           ln_view_of(a->rstd, 1, rows, rows, f),
                           ln_view_of(a->sum, rows, n, a->ldx, f)};
    /* y may be x exactly (in place); sum may be residual exactly (the residual stream). */
    const unsigned long long allowed = (1ull << LN_ALLOW_BIT(0, 0)) | (1ull << LN_ALLOW_BIT(3, 3));
    return ln_any_alias(out, 4, in, 4, allowed) ? LN_ERR_ALIAS : LN_OK;
}

int ln_check_backward(const ln_bwd_args *a, const float *dgamma, const float *dbeta,
                      size_t rows, unsigned allowed_flags)
{
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0;
    if (!a->dy || !a->x || (!a->mean && !rms) || !a->rstd)
        return LN_ERR_NULL;
    if (!ln_shape_ok(rows, a->cols, a->lddy, sizeof(float)) ||
        !ln_shape_ok(rows, a->cols, a->ldx, sizeof(float)) ||
        !ln_shape_ok(rows, a->cols, a->lddx, sizeof(float)))
        return LN_ERR_SHAPE;
    if (a->flags & ~allowed_flags)
        return LN_ERR_FLAGS;
    const size_t n = a->cols, f = sizeof(float);
    const ln_view in[] = {ln_view_of(a->dy, rows, n, a->lddy, f), ln_view_of(a->x, rows, n, a->ldx, f),
                          ln_view_of(a->gamma, 1, n, n, f), ln_view_of(rms ? NULL : a->mean, 1, rows, rows, f),
                          ln_view_of(a->rstd, 1, rows, rows, f)};
    const ln_view out[] = {ln_view_of(a->dx, rows, n, a->lddx, f), ln_view_of(dgamma, 1, n, n, f),
                           ln_view_of(dbeta, 1, n, n, f)};
    return ln_any_alias(out, 3, in, 5, 1ull << LN_ALLOW_BIT(0, 0)) ? LN_ERR_ALIAS : LN_OK;
}
