/* validate.c - argument checks shared by every entry point: shapes, flags, exact overlaps. */
#include <math.h>
#include <stdint.h>

#include "ln_internal.h"

ln_view ln_view_of(const void *p, size_t rows, size_t cols, size_t ld, size_t elem)
{
    ln_view v = {p, rows, cols * elem, ld * elem, 0, 0};
    /* The hull once per view: a call checks each view against several others. An absent
       or empty view keeps the empty hull [0, 0), which overlaps nothing. */
    if (p && rows && cols) {
        v.lo = (uintptr_t)p;
        v.hi = v.lo + (rows - 1) * v.stride + v.bytes;
    }
    return v;
}

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

static int hulls_meet(const ln_view *a, const ln_view *b) { return a->lo < b->hi && b->lo < a->hi; }

/* Whether any output's hull meets an input's or another output's: every pair tested,
   without early exits (a few dozen compares the compiler lays out straight), because in
   valid calls none meets. Absent views have the empty hull [0, 0). */
static int any_hull_meets(const ln_view *out, int nout, const ln_view *in, int nin)
{
    int any = 0;
    for (int o = 0; o < nout; o++) {
        for (int i = 0; i < nin; i++)
            any |= hulls_meet(&out[o], &in[i]);
        for (int p = o + 1; p < nout; p++)
            any |= hulls_meet(&out[o], &out[p]);
    }
    return any;
}

/* Called on every public call: the screen above settles valid calls (the forward's check
   took 12 ns instead of 20 with it, and the one-row call at 768 columns 166 ns instead of
   178, Zen 4); only a pair whose hulls meet pays for the exact test. */
int ln_any_alias(const ln_view *out, int nout, const ln_view *in, int nin,
                 unsigned long long allowed)
{
    if (!any_hull_meets(out, nout, in, nin))
        return 0;
    for (int o = 0; o < nout; o++) {
        if (out[o].hi == 0)
            continue;
        for (int i = 0; i < nin; i++) {
            if (!hulls_meet(&out[o], &in[i]))
                continue;
            const int exempt = ((allowed >> LN_ALLOW_BIT(o, i)) & 1u) && same_view(&out[o], &in[i]);
            if (!exempt && ln_views_overlap(out[o], in[i]))
                return 1;
        }
        for (int p = o + 1; p < nout; p++)
            if (hulls_meet(&out[o], &out[p]) && ln_views_overlap(out[o], out[p]))
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
