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
 * Forward accuracy (float32, every kernel -- scalar, AVX2, AVX-512, NEON, SVE at every
 * vector length -- LayerNorm and RMSNorm, against long-double truth from the same float
 * inputs, any row of finite floats: N(0,1), offsets up to |mean|/std = 1e8 and beyond,
 * spreads of 1e-4, outliers, a far first value, values near 1e18 or 1e-30, cols 1 to
 * 65536): y within 4 * 2^-24 of the truth in units of (1 + |gamma * xhat| + |beta|);
 * mean within 2^-23 of (|mean| + std); rstd within 4 * 2^-24 relative. Measured worst
 * over the tests, every kernel: y 3.7, mean 1.3, rstd 3.2 (units of 2^-24; README,
 * "Forward accuracy"). The exception is heavy tails, rows whose variance sits in a few
 * values (lognormal, Pareto, Cauchy samples): the float sums' roundings of the dominant
 * terms add up instead of averaging out, so the SIMD kernels guarantee only y within 12
 * and rstd within 10 * 2^-24 there (the mean keeps its bound); measured worst 5.3 and
 * 4.4 (AVX2 and AVX-512). The scalar kernel, in double, stays within 1 on every row.
 * Known exceptions on the SIMD kernels (an independent audit, 2026-12-07; README, "Where
 * the bounds do not hold"): their centre (mean plus its remainder) is off by up to ~1 *
 * 2^-24 of std, which y carries times |gamma| where xhat is near 0, so y leaves the bound
 * once |gamma| exceeds ~4 (measured 6.9 at gamma = 6, 51 at gamma = 50); the mean reached
 * 2.19 * 2^-24 on a 17-column row of +-1e4 alternating; rows whose mean is subnormal get
 * it within a few 2^-149 (no float meets a bound relative to a subnormal).
 * The SIMD kernels keep each lane's shift and mean in two floats (the reported mean is
 * their sum rounded once), take rstd from M2 in double, and redo a row whose float
 * statistics overflowed or underflowed in double.
 *
 * ABI: plain functions, raw pointers, size_t sizes; no structs, callbacks or handles, so
 * any FFI can call them. Existing signatures, status codes and ISA ids never change; new
 * capability arrives as new functions in a new symbol version node.
 *
 * Range: forward gives the accuracy above for every row of finite floats whose rstd is
 * a finite float (var + eps above ~1e-76) -- rows beyond the float statistics' range
 * take the double path. A NaN or Inf in a row makes that row's outputs NaN only.
 *
 * Environment (each read once, at the first call): LN_MAX_ISA (ln_set_max_isa),
 * LN_NUM_THREADS (ln_set_num_threads), LN_NT_BYTES: calls whose operands (the rows they
 * read and write: x and y, with the fused add's residual and sum; dy, x and dx) total at
 * least this many bytes write their outputs with non-temporal stores on x86 (f32
 * LayerNorm's y and dx, not with LN_FLAG_ACCUMULATE; bf16 y, and bf16 dx with AVX-512;
 * GELU's forward y, counting x and y), and such calls prefetch ahead (decimal, optional
 * K/M/G suffix; 0 = always; default a third of min(last-level cache, 32 MiB)).
 * Results are bitwise the same either way.
 */

#include <stddef.h>
#include <stdint.h>

#define LN_VERSION_MAJOR 1
#define LN_VERSION_MINOR 3
#define LN_VERSION_PATCH 0
#define LN_VERSION_STRING "1.3.0"

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
    LN_ERR_NOMEM = 6, /* backward's dgamma/dbeta scratch could not be allocated */
    LN_ERR_FLAGS = 7, /* a flag bit the function does not know (since 1.1) */
    LN_ERR_KIND = 8   /* an enumerated argument (the GELU kind) has an unknown value (1.3) */
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
 * Accuracy, every kernel (scalar, AVX2, AVX-512, NEON, SVE), LayerNorm and RMSNorm, any
 * row of finite floats (offset rows to |mean|/std 1e8, tiny spread, outliers, heavy tails,
 * 1e18 and 1e-30 scales, 1..65536 columns): dx within 1e-6 of the row's largest |dx|,
 * dgamma and dbeta within 1e-6 of the largest column's sum of magnitudes (over rows, of
 * |dy * xhat| and of |dy|; where a column's terms cancel, its value can be far smaller:
 * terms of +-60 summing to 0.57 carry 4.8e-6 of it in their own roundings, which only
 * the scalar kernel's double arithmetic avoids). Measured worst over the tests: 3.2e-7
 * dx, 1.5e-7 dgamma, 1.1e-7 dbeta. Truth: exact arithmetic on the same inputs with the
 * row's exact mean: the kernels recover the rounding of the saved float mean from the
 * row itself (the correction limited to 2^-22 |mean| + 2^-149: what an offset row or a
 * subnormal mean needs).
 * Known exceptions on the SIMD kernels (the audit above): where g = dy * gamma has a
 * common part far above its spread, g - mean(g) cancels in float (dy = 1 + 0.01 N(0,1),
 * 65535 columns: dx 6.7e-6); on long rows with a trend and |mean| ~ 75 std (a ramp
 * 300 +- 7 quantized to bf16, 65536 columns) the float sum that recovers the mean moves
 * dgamma by 1.3e-5. Where the true dx is subnormal, or only rounding (RMSNorm with one
 * column), no float result is within 1e-6 of it, on any kernel. Rows shorter than 16
 * columns, and rows whose float sums would overflow, are computed in double.
 * Checks, in order: rows == 0 no-op; NULL; shape; alias; then LN_ERR_NOMEM if the
 * scratch for dgamma/dbeta (24 bytes per column, columns counted up to a multiple of 16,
 * plus 8 per column for each further 64-row block on threads; 8 with LN_FLAG_ACCUMULATE
 * and at most 64 rows) cannot be had. That scratch is allocated only when dgamma or dbeta is
 * requested and rows > 64 or (ln_backward_ex_f32) LN_FLAG_ACCUMULATE is set; with
 * LN_FLAG_ACCUMULATE any row count, even 1, may therefore give LN_ERR_NOMEM. Without
 * dgamma and dbeta it is never returned.
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
 * no-op; NULL; shape; flags; alias; NOMEM (see ln_backward_f32: with LN_FLAG_ACCUMULATE
 * and dgamma or dbeta, at any row count). With strides = cols and flags = 0 it is
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

/*
 * Threads (since 1.2). Default 1: the library starts no thread unless asked, since FFI
 * hosts usually own their threads. ln_set_num_threads(n) sets the most threads a call
 * may use from then on, for the whole process; n < 1 means 1, n > 256 means 256; it
 * returns LN_OK. The environment variable LN_NUM_THREADS (a decimal integer, read once at
 * first use, clamped the same way; anything else is ignored) sets the starting value.
 * ln_get_num_threads() returns the setting.
 *
 * Which calls use threads: every function that computes (f32 LayerNorm and RMSNorm,
 * the fused add, bf16 LayerNorm, forward and backward, and GELU). LayerNorm splits rows, GELU
 * splits runs of 64 elements, among OpenMP threads (libgomp in gcc builds, libomp in
 * clang builds). y, mean, rstd, dx, dgamma and dbeta are bitwise identical for every
 * thread count (per ISA): a row never depends on the others, a GELU element sits in the
 * same vector lane whoever computes it, and dgamma/dbeta are summed per fixed 64-row
 * block and folded in block order. A call uses at most one thread per 32768 (forward) or
 * 65536 (backward) elements of rows * cols, or per 16384 GELU elements, and backward at
 * most one per 64-row block, so small calls never start threads. Called from inside an
 * OpenMP parallel region, a call runs on the calling thread (unless the host enabled
 * nested parallelism). With threads, backward keeps the dgamma/dbeta partials of every
 * 64-row block (rows * cols / 8 bytes); if that cannot be allocated it runs on one
 * thread instead, with the same result. Threads pay off on idle cores: on a loaded
 * machine a call waits until the OS runs all of its threads.
 *
 * fork: OpenMP's threads do not survive fork(): libgomp hangs a child's first parallel
 * region once the parent has a thread pool, and that pool may be the host's own (any
 * OpenMP region the host ran, e.g. PyTorch or an OpenMP BLAS), not the library's. So the
 * library registers a pthread_atfork child handler when it is loaded, and in every
 * process forked from a process that had loaded it, every call runs on the calling
 * thread: the same results, never a hang, whatever the host did before the fork and
 * whatever the setting. ln_get_num_threads() in the child still returns the setting
 * (inherited from the parent, or set there). A process that exec()s starts afresh.
 * If the handler cannot be registered (pthread_atfork fails), no call ever uses threads.
 */
LN_API int ln_set_num_threads(int n);
LN_API int ln_get_num_threads(void);

/* The loaded library's version, major*10000 + minor*100 + patch, and as a string:
   compare with LN_VERSION_* to detect a header/library mismatch. */
LN_API unsigned ln_version(void);
LN_API const char *ln_version_string(void);

/* ==== bf16 LayerNorm and GELU (since 1.3, symbol node LAYERNORM_1.3) ==================
 *
 * bf16 ("brain float") values are passed as their raw 16 bits in uint16_t: the upper half
 * of the IEEE float with the same value. They are widened exactly to float; every sum,
 * mean and product is float32 (never bf16), so the result equals rounding the float
 * LayerNorm of the widened inputs, within one bf16 ulp. Outputs are rounded to nearest,
 * ties to even; a NaN stays a (quiet) NaN, infinities and signed zeros stay; bf16
 * subnormals are kept (never flushed), whichever instructions the kernel uses.
 */

/*
 * bf16 forward: as ln_forward_f32, with x and y rows*cols bf16 values. gamma, beta (cols
 * floats, NULL: ones / zeros), mean and rstd (rows floats, written when non-NULL) are
 * float. Same checks in the same order and the same status codes; y == x is allowed.
 */
LN_API int ln_forward_bf16(const uint16_t *x, const float *gamma, const float *beta,
                           uint16_t *y, float *mean, float *rstd,
                           size_t rows, size_t cols, float eps);

/*
 * bf16 backward: as ln_backward_f32, with dy, x and dx rows*cols bf16 values; gamma,
 * mean, rstd (as written by either forward), dgamma and dbeta are float, and dgamma and
 * dbeta are accumulated in float per block and folded in double exactly as for float.
 * dx == dy is allowed. Same checks, order and status codes as ln_backward_f32.
 */
LN_API int ln_backward_bf16(const uint16_t *dy, const uint16_t *x,
                            const float *gamma, const float *mean, const float *rstd,
                            uint16_t *dx, float *dgamma, float *dbeta,
                            size_t rows, size_t cols);

/*
 * GELU, elementwise over n floats, the activation after LayerNorm in a GPT-2 block:
 *     LN_GELU_TANH   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))     GPT-2's form
 *     LN_GELU_ERF    0.5 x (1 + erf(x / sqrt(2)))                         exact form
 * Computed as x * sigmoid(2u) and 0.5 x erfc(-x / sqrt(2)), which never cancel (1 + tanh
 * and 1 + erf lose every digit for x < -4), with the special functions' arguments formed
 * in float-float, so GELU's steep fall for x < 0 does not amplify their rounding
 * (docs/gelu.md). Accuracy against the exact function, every ISA: within 4 float ulp
 * wherever |f| >= 2^-100 (measured: 2.7 ulp tanh form, 2.9 erf form), and below to the
 * same relative bound plus 2^-149 where the result is subnormal. The derivative is
 * within 3 ulp for x >= -1 away from its zero at x = -0.75 (|x + 0.75| > 0.25; measured
 * 2.5 tanh form, 2.7 erf form), within 4 ulp plus a few ulps of its terms' size nearer
 * it (where they cancel), within 11 ulp (tanh form) and 7 ulp (erf form) for x < -1,
 * down to f' ~ 1e-38 and below; dx = dy f' adds |dy| times that and its own rounding. NaN in, NaN out; f(+Inf) = +Inf, f(-Inf) = -0;
 * f'(+Inf) = 1, f'(-Inf) = 0.
 *
 * ln_gelu_forward_f32: y[i] = f(x[i]). ln_gelu_backward_f32: dx[i] = dy[i] * f'(x[i]).
 * n == 0 is a successful no-op; then, in order: a NULL pointer -> LN_ERR_NULL; n * 4
 * bytes overflowing -> LN_ERR_SHAPE; kind neither value below -> LN_ERR_KIND; an output
 * overlapping an input other than exactly (y == x; dx == dy or dx == x) -> LN_ERR_ALIAS.
 */
#define LN_GELU_TANH 0
#define LN_GELU_ERF 1
LN_API int ln_gelu_forward_f32(const float *x, float *y, size_t n, int kind);
LN_API int ln_gelu_backward_f32(const float *dy, const float *x, float *dx, size_t n,
                                int kind);

#ifdef __cplusplus
}
#endif

#endif /* LAYERNORM_H */
