/* bf16_elem.h - bf16 rows for the LayerNorm bodies: the element type and its argument structs. */
#ifndef LN_KERNELS_BF16_ELEM_H
#define LN_KERNELS_BF16_ELEM_H

/*
 * bf16 LayerNorm is the f32 body with widening loads and rounding stores (kernels/elem.h):
 * the statistics, the apply and the backward are float, so every accuracy argument of the
 * f32 kernels carries over, and only the rounding of the results is bf16's. The kernel
 * file supplies the vector forms e_load e_loadm e_store e_storem, which must round as
 * ln_f32_to_bf16 does (nearest even, NaN made quiet).
 */
#include "bf16.h"
#include "ln_internal.h"

#define LN_ELEM uint16_t

/* The f32 structs' field names; flags, residual and sum stay 0 (bf16 has neither). */
typedef struct ln_body_fwd_args {
    const uint16_t *x;
    size_t ldx;
    const float *gamma, *beta;
    uint16_t *y;
    size_t ldy;
    float *mean, *rstd;
    size_t cols;
    float eps;
    unsigned flags;
    const uint16_t *residual;
    uint16_t *sum;
    unsigned nt; /* x and y exceed the cache: prefetch, stream y where the kernel can */
} ln_body_fwd_args;

typedef struct ln_body_bwd_args {
    const uint16_t *dy;
    size_t lddy;
    const uint16_t *x;
    size_t ldx;
    const float *gamma, *mean, *rstd;
    uint16_t *dx;
    size_t lddx;
    size_t cols;
    unsigned flags;
    unsigned nt; /* dy, x and dx exceed the cache: prefetch, stream dx where it can */
    size_t pf_rows;
    float *acc_dg, *acc_db; /* as ln_bwd_args': never set, bf16 calls take no flags */
} ln_body_bwd_args;

static inline float e_get(const uint16_t *p) { return ln_bf16_to_f32(*p); }
static inline void e_put(uint16_t *p, float v) { *p = ln_f32_to_bf16(v); }

#endif /* LN_KERNELS_BF16_ELEM_H */
