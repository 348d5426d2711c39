/* ln_internal.h - the contract between the dispatcher and the per-ISA kernels. */
#ifndef LN_INTERNAL_H
#define LN_INTERNAL_H

#include <stddef.h>

#include "layernorm.h"
#include "ln_config.h"

/*
 * Kernels receive arguments already validated. They never validate, allocate, print or
 * touch memory outside the rows they are given (tails are masked/predicated), and a
 * row's results never depend on which other rows share the call or on r0/r1: that is
 * what makes results identical for any split of rows among threads.
 *
 * Row strides (ldx, ldy, ...) are in elements and >= cols; the v1.0 API passes cols.
 */
typedef struct ln_fwd_args {
    const float *x;
    size_t ldx;
    const float *gamma; /* NULL: ones */
    const float *beta;  /* NULL: zeros */
    float *y;
    size_t ldy;
    float *mean; /* NULL: not stored */
    float *rstd; /* NULL: not stored */
    size_t cols;
    float eps;
    unsigned flags;        /* LN_FLAG_RMS_NORM */
    const float *residual; /* non-NULL: normalize s = x + residual (rows ldx apart) */
    float *sum;            /* with residual: s is stored here when non-NULL (ldx apart);
                              may be residual itself, so read s back from sum if given */
} ln_fwd_args;

typedef struct ln_bwd_args {
    const float *dy;
    size_t lddy;
    const float *x;
    size_t ldx;
    const float *gamma; /* NULL: ones */
    const float *mean;
    const float *rstd;
    float *dx; /* NULL: not computed */
    size_t lddx;
    size_t cols;
    unsigned flags; /* LN_FLAG_RMS_NORM (mean is then not read), LN_FLAG_ACCUMULATE
                       (dx += ...; dgamma/dbeta accumulation is ln_backward_run's) */
} ln_bwd_args;

/* Forward for rows [r0, r1). */
typedef void (*ln_fwd_fn)(const ln_fwd_args *a, size_t r0, size_t r1);

/*
 * Backward for rows [r0, r1), which the dispatcher keeps within one block of
 * LN_BWD_BLOCK rows. dgamma_part/dbeta_part (cols floats each, either may be NULL) are
 * overwritten with this block's sums over rows of dy*xhat and dy, accumulated from +0.0f
 * so that an all-zero sum is +0 (cols == 1 must give dgamma == +0 bit-exactly).
 */
typedef void (*ln_bwd_fn)(const ln_bwd_args *a, size_t r0, size_t r1,
                          float *dgamma_part, float *dbeta_part);

/* One table per ISA, filled with designated initializers in that ISA's kernel file; every
   field must be set for every ISA (the dispatcher swaps whole tables, never fields). */
typedef struct ln_kernels {
    int isa;
    const char *name;
    ln_fwd_fn forward;
    ln_bwd_fn backward;
} ln_kernels;

/*
 * dgamma/dbeta are summed per block of this many rows, then the blocks' partials are
 * added in block order in double. Fixed, so the bits never depend on how rows are split.
 */
#define LN_BWD_BLOCK 64

extern const ln_kernels ln_kernels_scalar;
#if LN_HAVE_AVX2
extern const ln_kernels ln_kernels_avx2;
#endif
#if LN_HAVE_AVX512
extern const ln_kernels ln_kernels_avx512;
#endif
#if LN_HAVE_NEON
extern const ln_kernels ln_kernels_neon;
#endif
#if LN_HAVE_SVE
extern const ln_kernels ln_kernels_sve;
#endif

/* What the CPU and the OS support (cpu_features_*.c); bit (1u << isa). Scalar always. */
unsigned ln_cpu_isa_mask(void);

/* The kernel table of `isa` if compiled in and runnable here, else NULL. Tests use it
   to reach every kernel directly. */
const ln_kernels *ln_kernels_get(int isa);

/* The active table: resolved once (CPU, LN_MAX_ISA), then changed by ln_set_max_isa. */
const ln_kernels *ln_active(void);

/* ---- Argument checks (validate.c), for any element size ---- */

/* `rows` rows of `bytes` bytes each, `stride` bytes apart (a vector is one row). */
typedef struct ln_view {
    const void *p;
    size_t rows, bytes, stride;
} ln_view;
ln_view ln_view_of(const void *p, size_t rows, size_t cols, size_t ld, size_t elem);
/* cols > 0, ld >= cols, and the bytes spanned fit in size_t. */
int ln_shape_ok(size_t rows, size_t cols, size_t ld, size_t elem);
/* Whether any byte belongs to a row of both views (exact, strides included). */
int ln_views_overlap(ln_view a, ln_view b);
/* Any output overlapping an input or another output. Bit LN_ALLOW_BIT(o, i) of `allowed`
   lets output o be input i exactly (same pointer and layout): in-place operation. */
#define LN_ALLOW_BIT(o, i) ((o) * 8 + (i))
int ln_any_alias(const ln_view *out, int nout, const ln_view *in, int nin,
                 unsigned long long allowed);
/* NULL, shape, eps, flags (bits outside allowed_flags), alias: the header's order. */
int ln_check_forward(const ln_fwd_args *a, size_t rows, unsigned allowed_flags);
int ln_check_backward(const ln_bwd_args *a, const float *dgamma, const float *dbeta,
                      size_t rows, unsigned allowed_flags);

/* Runs a validated backward over all rows: blocks, partials, the fixed-order fold.
   Returns LN_OK or LN_ERR_NOMEM (before anything is written). */
int ln_backward_run(const ln_kernels *k, const ln_bwd_args *a, size_t rows,
                    float *dgamma, float *dbeta);

#endif /* LN_INTERNAL_H */
