/* layernorm.h - the public C API of liblayernorm: GPT-2 LayerNorm on CPUs (the manual). */
#ifndef LAYERNORM_H
#define LAYERNORM_H

/*
 * liblayernorm normalizes each row of a row-major `rows x cols` float matrix:
 *
 *     mean = (1/n) sum x_i                  n = cols
 *     var  = (1/n) sum (x_i - mean)^2       biased, as GPT-2, PyTorch and TensorFlow
 *     rstd = 1 / sqrt(var + eps)
 *     y_i  = gamma_i * (x_i - mean) * rstd + beta_i
 *
 * Statistics come from one fused (Welford) pass; the output is applied in centered form,
 * so rows with |mean| >> std keep their precision and constant rows give y == beta
 * exactly. Every function is thread-safe and reentrant, never prints, never aborts and,
 * on any error, writes nothing to any output.
 *
 * ABI: plain functions, raw pointers, size_t sizes; no structs, callbacks or handles, so
 * any FFI can call them. Existing signatures, status codes and ISA ids never change; new
 * capability arrives as new functions in a new symbol version node.
 *
 * Range: every kernel gives finite outputs for finite inputs while every |x_i - mean| of
 * the row is below 1e19 / sqrt(cols) (the float kernels' sum of squared deviations,
 * n * var, then stays below FLT_MAX = 3.4e38). Beyond that the call still succeeds and
 * touches only its own rows, but that row's outputs are unspecified: the SIMD kernels
 * may give Inf or NaN there; the scalar one, which works in double, stays finite.
 */

#include <stddef.h>

#define LN_VERSION_MAJOR 1
#define LN_VERSION_MINOR 1
#define LN_VERSION_PATCH 0
#define LN_VERSION_STRING "1.1.0"

#if defined(_WIN32)
#define LN_API
#elif defined(__GNUC__)
#define LN_API __attribute__((visibility("default")))
#else
#define LN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: permanent values. */
enum {
    LN_OK = 0,
    LN_ERR_NULL = 1,  /* a required pointer is NULL */
    LN_ERR_SHAPE = 2, /* cols == 0, or the byte size of an operand overflows size_t */
    LN_ERR_EPS = 3,   /* eps is NaN, infinite or negative */
    LN_ERR_ALIAS = 4, /* two operands overlap in a way the function does not allow */
    LN_ERR_ISA = 5,   /* unknown ISA id, or an ISA this build or CPU cannot run */
    LN_ERR_NOMEM = 6, /* a scratch allocation failed (backward's dgamma/dbeta scratch) */
    LN_ERR_FLAGS = 7  /* a flag bit the function does not know (since 1.1) */
};

/* Instruction-set ids: permanent values. */
enum {
    LN_ISA_SCALAR = 0, /* portable C, computes in double: the reference */
    LN_ISA_AVX2 = 1,   /* x86-64 AVX2 + FMA */
    LN_ISA_AVX512 = 2, /* x86-64 AVX-512 F, BW, VL and DQ */
    LN_ISA_NEON = 3,   /* AArch64 Advanced SIMD */
    LN_ISA_SVE = 4     /* AArch64 SVE, any vector length */
};

/*
 * Forward. x: rows*cols floats. gamma, beta: cols floats each, NULL meaning all ones /
 * all zeros. y: rows*cols floats, written; y == x (in place) is allowed. mean, rstd: rows
 * floats each, written when non-NULL (what backward needs).
 *
 * Checks, in this order: rows == 0 is a successful no-op (any pointer may then be NULL);
 * x or y NULL -> LN_ERR_NULL; cols == 0 or a byte size overflowing size_t -> LN_ERR_SHAPE;
 * eps NaN, infinite or < 0 -> LN_ERR_EPS; any overlap between an output and an input or
 * another output, other than y == x exactly -> LN_ERR_ALIAS.
 *
 * GPT-2 uses eps = 1e-5. With eps == 0 a constant row has rstd = +Inf and y = NaN.
 */
LN_API int ln_forward_f32(const float *x, const float *gamma, const float *beta,
                          float *y, float *mean, float *rstd,
                          size_t rows, size_t cols, float eps);

/*
 * Backward. dy, x: rows*cols floats; mean, rstd: rows floats, as written by forward (all
 * four required). gamma: cols floats, NULL meaning ones. Outputs, each optional (NULL:
 * not computed) and overwritten when given:
 *     dx     rows*cols floats   dx_i = rstd * (g_i - mean(g) - xhat_i * mean(g * xhat)),
 *                               g = dy * gamma, xhat = (x - mean) * rstd
 *     dgamma cols floats        sum over rows of dy * xhat
 *     dbeta  cols floats        sum over rows of dy
 * dgamma and dbeta are reduced over fixed blocks of rows combined in a fixed order, so
 * they are bitwise reproducible. dx == dy is allowed; any other overlap -> LN_ERR_ALIAS.
 * Checks, in order: rows == 0 no-op; NULL; shape; alias; then LN_ERR_NOMEM if the
 * scratch for dgamma/dbeta (24 bytes per column, only when rows > 64) cannot be had.
 */
LN_API int ln_backward_f32(const float *dy, const float *x,
                           const float *gamma, const float *mean, const float *rstd,
                           float *dx, float *dgamma, float *dbeta,
                           size_t rows, size_t cols);

/* ---- Since 1.1 (symbol node LAYERNORM_1.1): strided rows, flags, RMSNorm, gradient
   accumulation and the fused residual add of pre-LN blocks. ---- */

/* No centering: ms = mean(x^2), rstd = 1/sqrt(ms + eps), y = x * rstd * gamma + beta
   (LLaMA-style RMSNorm); a requested mean gets 0. Backward: xhat = x * rstd,
   dx = rstd * (g - xhat * mean(g * xhat)); mean is then not read and may be NULL. */
#define LN_FLAG_RMS_NORM 0x1u
/* Backward only: dx, dgamma and dbeta are added to (micro-batch gradient accumulation),
   not overwritten. */
#define LN_FLAG_ACCUMULATE 0x2u

/*
 * ln_forward_f32 over row views: row r of x starts at x + r*ldx, of y at y + r*ldy (row
 * strides in elements, each >= cols, else LN_ERR_SHAPE), so a column slice of a wider
 * matrix (e.g. one of Q, K, V) needs no copy. flags: 0 or LN_FLAG_RMS_NORM, any other bit
 * is LN_ERR_FLAGS. Overlap is judged on the bytes the rows really occupy, so interleaved
 * views of one buffer are fine; in place needs y == x and ldy == ldx.
 * Checks in order: rows == 0 no-op; NULL; shape; eps; flags; alias.
 * With ldx = ldy = cols and flags = 0 it is ln_forward_f32, bit for bit.
 */
LN_API int ln_forward_ex_f32(const float *x, size_t ldx, const float *gamma,
                             const float *beta, float *y, size_t ldy, float *mean,
                             float *rstd, size_t rows, size_t cols, float eps,
                             unsigned flags);

/*
 * ln_backward_f32 over row views (strides as above; dx == dy in place needs lddx == lddy)
 * with flags LN_FLAG_RMS_NORM and/or LN_FLAG_ACCUMULATE. Checks in order: rows == 0
 * no-op; NULL; shape; flags; alias; NOMEM. With strides = cols and flags = 0 it is
 * ln_backward_f32, bit for bit.
 */
LN_API int ln_backward_ex_f32(const float *dy, size_t lddy, const float *x, size_t ldx,
                              const float *gamma, const float *mean, const float *rstd,
                              float *dx, size_t lddx, float *dgamma, float *dbeta,
                              size_t rows, size_t cols, unsigned flags);

/*
 * The pre-LN block in one pass over memory: s = x + residual (float addition), written to
 * sum when sum != NULL, then y = LN(s) (or RMSNorm(s) with LN_FLAG_RMS_NORM), with mean
 * and rstd as in ln_forward_f32. All rows contiguous (rows*cols floats). sum == residual
 * is allowed (write back into the residual stream) and so is y == x; any other overlap is
 * LN_ERR_ALIAS. y equals ln_forward_f32 applied to the s this function computes.
 */
LN_API int ln_add_forward_f32(const float *x, const float *residual, const float *gamma,
                              const float *beta, float *sum, float *y, float *mean,
                              float *rstd, size_t rows, size_t cols, float eps,
                              unsigned flags);

/* A static English description of a status code ("unknown status" for others). */
LN_API const char *ln_status_string(int status);

/*
 * ISA selection. The library uses the best ISA that the CPU and the OS support, capped
 * by the environment variable LN_MAX_ISA (scalar|avx2|avx512|neon|sve, any case, read
 * once at first use; unknown values and another architecture's names are ignored).
 * ln_set_max_isa(isa) caps it from then on for the whole process: LN_ERR_ISA (and no
 * change) unless ln_isa_available(isa). Forward and backward always switch together.
 */
LN_API int ln_get_isa(void);
LN_API int ln_set_max_isa(int isa);
LN_API int ln_isa_available(int isa); /* 1 if compiled in and runnable here, else 0 */
LN_API const char *ln_isa_name(int isa); /* "scalar", "avx2", ...; "unknown" */

/* The loaded library's version, major*10000 + minor*100 + patch, and as a string:
   compare with LN_VERSION_* to detect a header/library mismatch. */
LN_API unsigned ln_version(void);
LN_API const char *ln_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* LAYERNORM_H */
