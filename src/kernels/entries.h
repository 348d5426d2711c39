/* entries.h - the named entry points a kernel file gives dispatch.c's records, once for all ISAs. */
#ifndef LN_KERNELS_ENTRIES_H
#define LN_KERNELS_ENTRIES_H

/*
 * The bodies define static functions (forward_kernel, bf16_forward, gelu_forward, ...)
 * so that one body can be compiled into several files; these macros give them the
 * exported, ISA-suffixed names that ln_internal.h declares. A call costs one direct jump,
 * once per call (never per row or element).
 */
#define LN_F32_ENTRIES(sfx, fwd, bwd)                                                        \
    void ln_forward_##sfx(const ln_fwd_args *a, size_t r0, size_t r1) { fwd(a, r0, r1); }   \
    void ln_backward_##sfx(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db) \
    {                                                                                        \
        bwd(a, r0, r1, dg, db);                                                              \
    }

#define LN_BF16_ENTRIES(sfx)                                                                 \
    void ln_bf16_forward_##sfx(const ln_bf16_fwd_args *a, size_t r0, size_t r1)              \
    {                                                                                        \
        bf16_forward(a, r0, r1);                                                             \
    }                                                                                        \
    void ln_bf16_backward_##sfx(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg, \
                                float *db)                                                   \
    {                                                                                        \
        bf16_backward(a, r0, r1, dg, db);                                                    \
    }

#define LN_GELU_ENTRIES(sfx)                                                                 \
    void ln_gelu_forward_##sfx(const float *x, float *y, size_t n, int kind)                \
    {                                                                                        \
        gelu_forward(x, y, n, kind);                                                         \
    }                                                                                        \
    void ln_gelu_backward_##sfx(const float *dy, const float *x, float *dx, size_t n,       \
                                int kind)                                                    \
    {                                                                                        \
        gelu_backward(dy, x, dx, n, kind);                                                   \
    }

#endif /* LN_KERNELS_ENTRIES_H */
