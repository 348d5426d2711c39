/* elem.h - the element type of a body's rows: float unless the kernel file names another. */
#ifndef LN_KERNELS_ELEM_H
#define LN_KERNELS_ELEM_H

#include "ln_internal.h"

/*
 * x, residual, sum, y, dy and dx are LN_ELEM; gamma, beta, statistics and partials are
 * always float. A kernel file for another element type (bf16) defines, before including
 * a body: LN_ELEM, the argument structs ln_body_fwd_args / ln_body_bwd_args (the f32
 * structs' field names), e_get / e_put (one element to and from float) and the vector
 * forms e_load e_loadm e_store e_storem (widening load, rounding store).
 */
#ifndef LN_ELEM
#define LN_ELEM float
#define LN_ELEM_F32 1
typedef ln_fwd_args ln_body_fwd_args;
typedef ln_bwd_args ln_body_bwd_args;
static inline float e_get(const float *p) { return *p; }
static inline void e_put(float *p, float v) { *p = v; }
#endif

#endif /* LN_KERNELS_ELEM_H */
