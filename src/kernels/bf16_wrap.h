/* bf16_wrap.h - the bf16 kernel entry points: the bf16 arguments handed to the f32 bodies. */
#ifndef LN_KERNELS_BF16_WRAP_H
#define LN_KERNELS_BF16_WRAP_H

/* Included after kernels/bf16_elem.h, the vocabulary and both bodies. */
static void bf16_forward(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    const ln_body_fwd_args b = {a->x,    a->ldx,  a->gamma, a->beta, a->y, a->ldy, a->mean,
                                a->rstd, a->cols, a->eps,   0u,      NULL, NULL};
    forward_kernel(&b, r0, r1);
}

static void bf16_backward(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                          float *db)
{
    const ln_body_bwd_args b = {a->dy,   a->lddy, a->x,  a->ldx,  a->gamma, a->mean,
                                a->rstd, a->dx,   a->lddx, a->cols, 0u};
    backward_kernel(&b, r0, r1, dg, db);
}

#endif /* LN_KERNELS_BF16_WRAP_H */
