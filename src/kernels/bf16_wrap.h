/* bf16_wrap.h - the bf16 kernel entry points: the bf16 arguments handed to the f32 bodies. */
#ifndef LN_KERNELS_BF16_WRAP_H
#define LN_KERNELS_BF16_WRAP_H

/*
 * Included after kernels/bf16_elem.h, the vocabulary and both bodies.
 *
 * A kernel file whose rounding store spends instructions on NaN may also be compiled with
 * stores that skip them (LN_BF16_TWIN_FORWARD / _BACKWARD name those entries). That is
 * exact when no NaN reaching a store has a nonzero low half: NaNs made by an invalid
 * operation are the default NaN (low half 0), NaNs from bf16 operands carry a bf16
 * payload (low half 0), and arithmetic already made them quiet; only a float operand
 * (gamma, beta, and for the backward mean and rstd) could bring other bits, which the
 * rounding add would carry into the exponent. So calls whose float operands are all
 * finite go to the twin, with bit-identical results. The check reads every float operand
 * once per call, so calls of fewer than 4 rows (where it would cost more than it saves) keep
 * the full store.
 */
#ifdef LN_BF16_TWIN_FORWARD
#define LN_BF16_TWIN_MIN_ROWS 4

/* p[0..n) all finite (or p NULL): x - x is 0 for those, NaN for NaN and +-Inf. */
static int all_finite(const float *p, size_t n)
{
    if (!p)
        return 1;
    V acc = v_zero();
    size_t i = 0;
    for (; i + LN_W <= n; i += LN_W) {
        const V v = v_load(p + i);
        acc = v_add(acc, v_sub(v, v));
    }
    if (i < n) {
        const V v = v_loadm(p + i, v_tailmask((unsigned)(n - i)));
        acc = v_add(acc, v_sub(v, v));
    }
    return hsum(acc) == 0.0f;
}
#endif

static void bf16_forward(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
#ifdef LN_BF16_TWIN_FORWARD
    if (r1 - r0 >= LN_BF16_TWIN_MIN_ROWS && all_finite(a->gamma, a->cols) &&
        all_finite(a->beta, a->cols)) {
        LN_BF16_TWIN_FORWARD(a, r0, r1);
        return;
    }
#endif
    const ln_body_fwd_args b = {a->x,    a->ldx,  a->gamma, a->beta, a->y, a->ldy, a->mean,
                                a->rstd, a->cols, a->eps,   0u,      NULL, NULL, a->nt};
    forward_kernel(&b, r0, r1);
}

static void bf16_backward(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                          float *db)
{
#ifdef LN_BF16_TWIN_BACKWARD
    if (r1 - r0 >= LN_BF16_TWIN_MIN_ROWS && all_finite(a->gamma, a->cols) &&
        all_finite(a->mean ? a->mean + r0 : NULL, r1 - r0) &&
        all_finite(a->rstd + r0, r1 - r0)) {
        LN_BF16_TWIN_BACKWARD(a, r0, r1, dg, db);
        return;
    }
#endif
    const ln_body_bwd_args b = {.dy = a->dy,     .lddy = a->lddy, .x = a->x,
                                .ldx = a->ldx,   .gamma = a->gamma, .mean = a->mean,
                                .rstd = a->rstd, .dx = a->dx,     .lddx = a->lddx,
                                .cols = a->cols, .nt = a->nt,     .pf_rows = a->pf_rows};
    backward_kernel(&b, r0, r1, dg, db);
}

#endif /* LN_KERNELS_BF16_WRAP_H */
