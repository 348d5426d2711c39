/* validate.c - argument checks shared by every entry point: shapes, flags, exact overlaps. */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

int ln_shape_ok(size_t rows, size_t cols, size_t ld, size_t elem)
{
    if (rows == 0 || cols == 0 || ld < cols || elem == 0)
        return 0;
    /* ((rows - 1) * ld + cols) * elem bytes must fit in size_t; checked multiplies rather
       than divisions, since every public call comes through here. */
    size_t span;
    return !__builtin_mul_overflow(rows - 1, ld, &span) &&
           !__builtin_add_overflow(span, cols, &span) &&
           !__builtin_mul_overflow(span, elem, &span);
}

/* Rows of each view are disjoint and ascending (stride >= bytes). Disjoint hulls settle
   almost every pair; when hulls meet and both views are solid (one row, or rows without
   gaps) they overlap; otherwise one merge-like sweep over both views' rows decides, in
   O(rows): valid calls reach it only for interleaved views of one buffer. */
int ln_views_overlap(ln_view a, ln_view b)
{
    if (a.hi <= b.lo || b.hi <= a.lo)
        return 0;
    if ((a.rows == 1 || a.stride == a.bytes) && (b.rows == 1 || b.stride == b.bytes))
        return 1;
    size_t i = 0, j = 0;
    while (i < a.rows && j < b.rows) {
        const uintptr_t a0 = a.lo + i * a.stride, a1 = a0 + a.bytes;
        const uintptr_t b0 = b.lo + j * b.stride, b1 = b0 + b.bytes;
        if (a0 < b1 && b0 < a1)
            return 1;
        if (a1 <= b1)
            i++;
        else
            j++;
    }
    return 0;
}

static int same_view(const ln_view *a, const ln_view *b)
{
    return a->p == b->p && a->rows == b->rows && a->bytes == b->bytes && a->stride == b->stride;
}

int ln_alias_exact(ln_views_fn fill, const void *ctx, size_t rows, int nout, int nin,
                   unsigned long long allowed)
{
    ln_view out[LN_MAX_VIEWS], in[LN_MAX_VIEWS];
    fill(ctx, rows, out, in);
    for (int o = 0; o < nout; o++) {
        if (out[o].hi == 0)
            continue;
        for (int i = 0; i < nin; i++) {
            if (!ln_hull_meets(&out[o], &in[i]))
                continue;
            const int exempt = ((allowed >> LN_ALLOW_BIT(o, i)) & 1u) && same_view(&out[o], &in[i]);
            if (!exempt && ln_views_overlap(out[o], in[i]))
                return 1;
        }
        for (int p = o + 1; p < nout; p++)
            if (ln_hull_meets(&out[o], &out[p]) && ln_views_overlap(out[o], out[p]))
                return 1;
    }
    return 0;
}

LN_VIEWS_FN void fwd_views(const void *ctx, size_t rows, ln_view *out, ln_view *in)
{
    const ln_fwd_args *a = ctx;
    const size_t n = a->cols, f = sizeof(float);
    in[0] = ln_view_of(a->x, rows, n, a->ldx, f);
    in[1] = ln_view_of(a->gamma, 1, n, n, f);
    in[2] = ln_view_of(a->beta, 1, n, n, f);
    in[3] = ln_view_of(a->residual, rows, n, a->ldx, f);
    out[0] = ln_view_of(a->y, rows, n, a->ldy, f);
    out[1] = ln_view_of(a->mean, 1, rows, rows, f);
    out[2] = ln_view_of(a->rstd, 1, rows, rows, f);
    out[3] = ln_view_of(a->sum, rows, n, a->ldx, f);
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
    /* y may be x exactly (in place); sum may be residual exactly (the residual stream). */
    const unsigned long long allowed = (1ull << LN_ALLOW_BIT(0, 0)) | (1ull << LN_ALLOW_BIT(3, 3));
    return ln_any_alias(fwd_views, a, rows, 4, 4, allowed) ? LN_ERR_ALIAS : LN_OK;
}

/* The backward's operands beside its arguments: the parameter gradients. */
typedef struct bwd_ctx {
    const ln_bwd_args *a;
    const float *dgamma, *dbeta;
} bwd_ctx;

LN_VIEWS_FN void bwd_views(const void *ctx, size_t rows, ln_view *out, ln_view *in)
{
    const bwd_ctx *c = ctx;
    const ln_bwd_args *a = c->a;
    const size_t n = a->cols, f = sizeof(float);
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0;
    in[0] = ln_view_of(a->dy, rows, n, a->lddy, f);
    in[1] = ln_view_of(a->x, rows, n, a->ldx, f);
    in[2] = ln_view_of(a->gamma, 1, n, n, f);
    in[3] = ln_view_of(rms ? NULL : a->mean, 1, rows, rows, f);
    in[4] = ln_view_of(a->rstd, 1, rows, rows, f);
    out[0] = ln_view_of(a->dx, rows, n, a->lddx, f);
    out[1] = ln_view_of(c->dgamma, 1, n, n, f);
    out[2] = ln_view_of(c->dbeta, 1, n, n, f);
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
    const bwd_ctx c = {a, dgamma, dbeta};
    const unsigned long long allowed = 1ull << LN_ALLOW_BIT(0, 0);
    return ln_any_alias(bwd_views, &c, rows, 3, 5, allowed) ? LN_ERR_ALIAS : LN_OK;
}
