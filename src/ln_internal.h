/* ln_internal.h - the contract between the API, the runner, the dispatcher and the kernels. */
#ifndef LN_INTERNAL_H
#define LN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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
    unsigned nt; /* LN_NT_* bits (ln_nt_mode), 0 below ln_nt_bytes */
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
    unsigned nt; /* LN_NT_* bits (ln_nt_mode), 0 below ln_nt_bytes */
    size_t pf_rows; /* with nt: the call's row count. A kernel's prefetch hints (which
                       neither fault nor change memory) may name rows below it beyond its
                       own [r0, r1): blocks are 64 rows, shorter than the hints' reach */
    float *acc_dg, *acc_db; /* LN_FLAG_ACCUMULATE in one block (run.c): the caller's
                               dgamma/dbeta (either may be NULL). The kernel adds its block
                               partials to them, acc[j] = part[j] + acc[j] in float, and may
                               leave the dg/db it was given (scratch) unfinished */
} ln_bwd_args;

/* Forward for rows [r0, r1). */
typedef void (*ln_fwd_fn)(const ln_fwd_args *a, size_t r0, size_t r1);

/*
 * Backward for rows [r0, r1), which the runner keeps within one block of LN_BWD_BLOCK
 * rows when it asks for partials. dgamma_part/dbeta_part (cols floats each, either may be
 * NULL) are overwritten with this block's sums over rows of dy*xhat and dy, accumulated
 * from +0.0f so that an all-zero sum is +0 (cols == 1 must give dgamma == +0 bit-exactly).
 */
typedef void (*ln_bwd_fn)(const ln_bwd_args *a, size_t r0, size_t r1,
                          float *dgamma_part, float *dbeta_part);

/*
 * A backward kernel may leave its streamed (non-temporal) dx stores unordered: the
 * thread that ran it calls this once after its last block, before the call returns or
 * the team joins. A fence per 64-row block stalled on each block's write-combining
 * buffers: one per call ran the cold backward at 0.93-0.95x the time at 64 columns,
 * 0.97-0.98x at 128, 0.99x at 256 and 768, 1.00x at 4096 (Zen 5, AVX-512, 64 MiB,
 * calls alternating between the builds, both orders). x86 only: the Arm kernels' stores
 * are ordinary.
 */
static inline void ln_stream_fence(void)
{
#if defined(__SSE__)
    __builtin_ia32_sfence();
#endif
}

/* bf16 operands are raw bits (the high half of a float); everything else is float. */
typedef struct ln_bf16_fwd_args {
    const uint16_t *x;
    size_t ldx;
    const float *gamma; /* NULL: ones */
    const float *beta;  /* NULL: zeros */
    uint16_t *y;
    size_t ldy;
    float *mean; /* NULL: not stored */
    float *rstd; /* NULL: not stored */
    size_t cols;
    float eps;
    unsigned nt; /* LN_NT_* bits (ln_nt_mode), 0 below ln_nt_bytes */
} ln_bf16_fwd_args;

typedef struct ln_bf16_bwd_args {
    const uint16_t *dy;
    size_t lddy;
    const uint16_t *x;
    size_t ldx;
    const float *gamma; /* NULL: ones */
    const float *mean;
    const float *rstd;
    uint16_t *dx; /* NULL: not computed */
    size_t lddx;
    size_t cols;
    unsigned nt;    /* LN_NT_* bits (ln_nt_mode), 0 below ln_nt_bytes */
    size_t pf_rows; /* as ln_bwd_args.pf_rows */
} ln_bf16_bwd_args;

/* Same row contracts as ln_fwd_fn / ln_bwd_fn. */
typedef void (*ln_bf16_fwd_fn)(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
typedef void (*ln_bf16_bwd_fn)(const ln_bf16_bwd_args *a, size_t r0, size_t r1,
                               float *dgamma_part, float *dbeta_part);

/* Elementwise over n floats; kind is LN_GELU_TANH or LN_GELU_ERF (validated). y == x and
   dx == dy or dx == x exactly are allowed: every element is read before it is written. */
typedef void (*ln_gelu_fwd_fn)(const float *x, float *y, size_t n, int kind);
/* Or'ed into the forward's kind by the runner when x and y reach ln_nt_bytes: write y with
   non-temporal stores where the kernel has them (x86); the values are the same. */
#define LN_GELU_NT 0x100
typedef void (*ln_gelu_bwd_fn)(const float *dy, const float *x, float *dx, size_t n, int kind);

/*
 * One record per ISA holds every operation's entry points, so the dispatcher swaps whole
 * records and no call can mix ISAs. dispatch.c builds every record (the only place that
 * knows which kernels, CPU-extension variants and emulation a build has); kernel files
 * export named functions with the ISA suffix last. Every field is set in every record.
 */
typedef struct ln_kernels {
    int isa;
    const char *name;
    ln_fwd_fn forward;
    ln_bwd_fn backward;
    ln_bf16_fwd_fn bf16_forward;
    ln_bf16_bwd_fn bf16_backward;
    ln_gelu_fwd_fn gelu_forward;
    ln_gelu_bwd_fn gelu_backward;
    /* The record of the same ISA without CPU extensions (the BF16 conversion
       instructions); the record itself when it uses none. Tests compare the two. */
    const struct ln_kernels *plain;
} ln_kernels;

/*
 * dgamma/dbeta are summed per block of this many rows, then the blocks' partials are
 * added in block order in double. Fixed, so the bits never depend on how rows are split.
 */
#define LN_BWD_BLOCK 64

/* Kernel entry points, defined in the kernel files of the ISAs this build compiles. */
void ln_forward_scalar(const ln_fwd_args *a, size_t r0, size_t r1);
void ln_backward_scalar(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db);
void ln_forward_avx2(const ln_fwd_args *a, size_t r0, size_t r1);
void ln_backward_avx2(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db);
void ln_forward_avx512(const ln_fwd_args *a, size_t r0, size_t r1);
void ln_backward_avx512(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db);
void ln_forward_neon(const ln_fwd_args *a, size_t r0, size_t r1);
void ln_backward_neon(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db);
void ln_forward_sve(const ln_fwd_args *a, size_t r0, size_t r1);
void ln_backward_sve(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db);

/* bf16: the plain variants round with integer shifts; the ...bf16 variants use the ISA's
   BF16 conversion (vcvtne2ps2bf16, BFCVTN, BFCVT) with the same bits. */
void ln_bf16_forward_scalar(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_scalar(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                             float *db);
void ln_bf16_forward_avx2(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_avx2(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                           float *db);
void ln_bf16_forward_avx512(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_avx512(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                             float *db);
/* The NaN-free twins (kernels/bf16_wrap.h): reached only through the entries above. */
void ln_bf16_forward_avx2nf(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_avx2nf(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                             float *db);
void ln_bf16_forward_avx512nf(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_avx512nf(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                               float *db);
void ln_bf16_forward_avx512bf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_avx512bf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                                 float *db);
void ln_bf16_forward_neon(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_neon(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                           float *db);
void ln_bf16_forward_neonbf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_neonbf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                               float *db);
void ln_bf16_forward_sve(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_sve(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                          float *db);
void ln_bf16_forward_svebf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1);
void ln_bf16_backward_svebf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                              float *db);

void ln_gelu_forward_scalar(const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_scalar(const float *dy, const float *x, float *dx, size_t n, int kind);
void ln_gelu_forward_avx2(const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_avx2(const float *dy, const float *x, float *dx, size_t n, int kind);
void ln_gelu_forward_avx512(const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_avx512(const float *dy, const float *x, float *dx, size_t n, int kind);
void ln_gelu_forward_neon(const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_neon(const float *dy, const float *x, float *dx, size_t n, int kind);
void ln_gelu_forward_sve(const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_sve(const float *dy, const float *x, float *dx, size_t n, int kind);

/* What the CPU and the OS support (cpu_features_*.c, read by dispatch.c only); bit
   (1u << isa). Scalar always. */
unsigned ln_cpu_isa_mask(void);
/* CPU extensions beyond the ISA ids, detected like the ISAs. */
#define LN_CPUX_AVX512_BF16 1u /* CPUID.(7,1):EAX[5] with usable AVX-512 */
#define LN_CPUX_NEON_BF16 2u   /* HWCAP2_BF16 with usable NEON */
#define LN_CPUX_SVE_BF16 4u    /* HWCAP2_SVEBF16 with usable SVE */
unsigned ln_cpu_ext_mask(void);
/* Bytes of the last-level cache, 0 if unknown (read by dispatch.c only). */
size_t ln_cpu_llc_bytes(void);
/* How a cold call's prefetch hints go out on this CPU: LN_NT_PF_NTA, LN_NT_PF_LONG(32) (bits
   of ln_nt_mode; dispatch.c and kernels/ln_common.h say why). */
unsigned ln_cpu_nt_hints(void);
/* Those bits for an AMD (or Hygon) CPU of this family and model, as CPUID leaf 1 gives
   them with the extended fields added (x86 builds only; tests/test_nt_bytes.c). */
unsigned ln_amd_nt_hints(unsigned family, unsigned model);

/*
 * Calls whose operands (the rows read and written) total at least this many bytes write
 * their outputs with non-temporal stores (kernels see args.nt): they would not stay in
 * the last-level cache anyway, and streaming them past it saves the read-for-ownership
 * of every line and leaves the cache to the inputs. Set once from LN_NT_BYTES (bytes,
 * optional K/M/G suffix; 0 = always), else ln_nt_default_bytes().
 */
size_t ln_nt_bytes(void);
/* args.nt of a call at or past ln_nt_bytes: LN_NT_COLD, with the hint bits of
   ln_cpu_nt_hints() (LN_NT_PF_NTA: or the build's LN_FORCE_PF_NTA, 0 or 1, for A/B runs). */
#define LN_NT_COLD 1u    /* write the outputs with non-temporal stores, prefetch cold rows */
#define LN_NT_PF_NTA 2u  /* those hints as prefetchnta (kernels/ln_common.h) */
#define LN_NT_PF_LONG 4u   /* float rows up to 16 KiB hinted, not 8 (kernels/ln_common.h) */
#define LN_NT_PF_LONG32 8u /* float rows up to 32 KiB hinted (kernels/ln_common.h) */
unsigned ln_nt_mode(void);
/* A third of the LLC size capped at 32 MiB (32 MiB when unknown): dispatch.c says why. */
size_t ln_nt_default_bytes(void);

/* The record of `isa` if compiled in and runnable here, else NULL: the one dispatch
   would use for that ISA on this CPU (with its extensions). Tests reach every record
   through it (and ->plain). */
const ln_kernels *ln_kernels_get(int isa);

/* The active record: resolved once (CPU, LN_MAX_ISA), then changed by ln_set_max_isa. */
const ln_kernels *ln_active(void);

/* ---- Argument checks (validate.c), for any element size ---- */

/* `rows` rows of `bytes` bytes each, `stride` bytes apart (a vector is one row). */
typedef struct ln_view {
    const void *p;
    size_t rows, bytes, stride;
    uintptr_t lo, hi; /* the hull [lo, hi) of the bytes it spans; empty when p is NULL */
} ln_view;

/* Inline, for ln_any_alias's screen. */
static inline ln_view ln_view_of(const void *p, size_t rows, size_t cols, size_t ld, size_t elem)
{
    ln_view v = {p, rows, cols * elem, ld * elem, 0, 0};
    /* An absent or empty view keeps the empty hull [0, 0), which overlaps nothing. */
    if (p && rows && cols) {
        v.lo = (uintptr_t)p;
        v.hi = v.lo + (rows - 1) * v.stride + v.bytes;
    }
    return v;
}

/* cols > 0, ld >= cols, and the bytes spanned fit in size_t. */
int ln_shape_ok(size_t rows, size_t cols, size_t ld, size_t elem);
/* Whether any byte belongs to a row of both views (exact, strides included). */
int ln_views_overlap(ln_view a, ln_view b);
#define LN_ALLOW_BIT(o, i) ((o) * 8 + (i))

/* Fills a call's output and input views (at most LN_MAX_VIEWS each) from its arguments.
   Defined LN_VIEWS_FN, so that ln_any_alias's screen gets it inlined. */
#define LN_MAX_VIEWS 8
typedef void (*ln_views_fn)(const void *ctx, size_t rows, ln_view *out, ln_view *in);
#define LN_VIEWS_FN __attribute__((always_inline)) static inline

/* Whether two views' hulls meet (an empty hull meets nothing). */
static inline int ln_hull_meets(const ln_view *a, const ln_view *b)
{
    return a->lo < b->hi && b->lo < a->hi;
}

/* Whether any output's hull meets an input's or another output's. In valid calls none
   meets: every pair is tested without an early exit (straight-line compares). */
static inline int ln_hulls_meet(const ln_view *out, int nout, const ln_view *in, int nin)
{
    int any = 0;
    for (int o = 0; o < nout; o++) {
        for (int i = 0; i < nin; i++)
            any |= ln_hull_meets(&out[o], &in[i]);
        for (int p = o + 1; p < nout; p++)
            any |= ln_hull_meets(&out[o], &out[p]);
    }
    return any;
}

/* The exact test (validate.c), on the views `fill` builds again: the pairs whose hulls
   meet, less the exemptions, by rows. */
int ln_alias_exact(ln_views_fn fill, const void *ctx, size_t rows, int nout, int nin,
                   unsigned long long allowed);

/* Any output overlapping an input or another output. Bit LN_ALLOW_BIT(o, i) of `allowed`
   lets output o be input i exactly (same pointer and layout): in-place operation. The
   hulls settle valid calls; only calls where some meet (in place, interleaved views of
   one buffer, real overlaps) pay for the exact test. With `fill` inlined the screen reads
   only the hulls, which stay in registers: the rest of each view is built for the exact
   test alone. Built out of line and screened from arrays on the stack, the views made a
   one-row forward at 64 columns take 1.07x the time (Zen 5, AVX-512, calls alternating). */
__attribute__((always_inline)) static inline int
ln_any_alias(ln_views_fn fill, const void *ctx, size_t rows, int nout, int nin,
             unsigned long long allowed)
{
    ln_view out[LN_MAX_VIEWS], in[LN_MAX_VIEWS];
    fill(ctx, rows, out, in);
    return ln_hulls_meet(out, nout, in, nin) && ln_alias_exact(fill, ctx, rows, nout, nin, allowed);
}

/* NULL, shape, eps, flags (bits outside allowed_flags), alias: the header's order. */
int ln_check_forward(const ln_fwd_args *a, size_t rows, unsigned allowed_flags);
int ln_check_backward(const ln_bwd_args *a, const float *dgamma, const float *dbeta,
                      size_t rows, unsigned allowed_flags);

/* ---- The runner (run.c): a validated call over all rows or elements, on threads when
   the setting and the size call for it; the same bits for any number of threads. ---- */

void ln_forward_run(const ln_kernels *k, const ln_fwd_args *a, size_t rows);
/* Backward's blocks, partials and fixed-order fold. LN_OK, or LN_ERR_NOMEM before
   anything is written. */
int ln_backward_run(const ln_kernels *k, const ln_bwd_args *a, size_t rows, float *dgamma,
                    float *dbeta);
void ln_bf16_forward_run(const ln_kernels *k, const ln_bf16_fwd_args *a, size_t rows);
int ln_bf16_backward_run(const ln_kernels *k, const ln_bf16_bwd_args *a, size_t rows,
                         float *dgamma, float *dbeta);
/* GELU over n elements. */
void ln_gelu_forward_run(const ln_kernels *k, const float *x, float *y, size_t n, int kind);
void ln_gelu_backward_run(const ln_kernels *k, const float *dy, const float *x, float *dx,
                          size_t n, int kind);

#endif /* LN_INTERNAL_H */
