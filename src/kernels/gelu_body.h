/* gelu_body.h - GELU forward and backward (tanh and erf forms) over a per-ISA vocabulary. */
#ifndef LN_KERNELS_GELU_BODY_H
#define LN_KERNELS_GELU_BODY_H

/*
 * Included by a kernel file after its vocabulary (see ln_common.h) and these:
 *   v_fms(a,b,c) = a*b-c  v_max v_min (x86 operand order: NaN in the second operand is
 *   passed on)  v_or v_xor v_andnot(a,b) = ~a & b  v_abs
 *   v_select_ge0(h, a, b): a where h >= 0 (ordered), else b
 *   v_shl23(k): the float whose bits are k's shifted left by 23
 *   v_quot(a, b): a / b, the divide instruction (correctly rounded)
 *   v_rcp_approx(b): 1 / b to 8 bits or better; LN_RCP_APPROX_14 where it has 14 bits or
 *   more: erfcx then takes its quotient as a product with it instead of v_quot
 *   LN_GELU_NV: vectors per loop iteration (independent chains the core overlaps), and
 *   LN_GELU_NV_TANH where the tanh form's loops take another count
 *   LN_GELU_SIZELESS where vectors cannot form arrays (SVE)
 * The math is in gelu.h and gelu_math.h; every element's operations are the same in the
 * unrolled loop and the tail, so results do not depend on n or on the thread split.
 */
#include <stddef.h>
#include <stdint.h>

#include "gelu.h"

#ifndef LN_INLINE
#define LN_INLINE static inline __attribute__((always_inline))
#endif

LN_INLINE V vset(double c) { return v_set1((float)c); }

#include "gelu_math.h"

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
LN_INLINE V clamp_lo(V x) { return v_max(v_set1(-LN_GELU_CLAMP), x); }
LN_INLINE V clamp(V x) { return v_min(v_set1(LN_GELU_CLAMP), clamp_lo(x)); }

/* The tanh form's sigmoid(w), w = 2u = A v, v = x + K x^3 (gelu.h), from xn = -|x|:
   v(xn) = -|v| in float-float (exact products by fma, one two-sum), e = exp(A v(xn)) =
   exp(-|w|) <= 1 as E = e 2^64 (gelu_math.h); 1 + e is returned; sigmoid = 1 / (1 + e)
   for x >= 0 and e / (1 + e) below, and sigmoid (1 - sigmoid) = e / (1 + e)^2: *es gets
   E, *x2 x^2 rounded (the backward's w'). iadd: E's powers of two by integer adds
   (exp_av), and 1 + e from e = E 2^-64 likewise, no multiply: exact where e is normal;
   where it is not (n < -126) the exponent field wraps below zero into the sign bit, a
   negative lane as an integer, which v_imax0 makes +0, and 1 + e is then 1, as the fma
   rounds it for any e < 2^-25. The same bits either way. */
#ifdef LN_GELU_EXP_IADD
#define LN_GELU_IADD 1
#else
#define LN_GELU_IADD 0
#endif
#define LN_EXP_BITS_M64 (-0x1p65f) /* its bits: -64 << 23 */
#define LN_EXP_BITS_P64 0x1p-63f   /* its bits: 64 << 23 */
LN_INLINE V tanh_parts(V x, V *es, V *x2, int iadd)
{
    const V kh = vset(LN_GELU_HI(LN_GELU_K)), kl = vset(LN_GELU_LO(LN_GELU_K));
    const V xn = v_or(x, v_set1(-0.0f));
    const V x2h = v_mul(xn, xn), x2l = v_fms(xn, xn, x2h);
    *x2 = x2h;
    const V x3h = v_mul(x2h, xn), x3l = v_fma(x2l, xn, v_fms(x2h, xn, x3h));
    const V t3h = v_mul(kh, x3h);
    const V t3l = v_fma(kh, x3l, v_fma(kl, x3h, v_fms(kh, x3h, t3h)));
    const V vh = v_add(xn, t3h), bv = v_sub(vh, xn);
    const V vl = v_add(v_add(v_sub(xn, v_sub(vh, bv)), v_sub(t3h, bv)), t3l);
    *es = exp_av(vh, vl, iadd);
#ifdef LN_GELU_EXP_IADD
    if (iadd)
        return v_add(v_set1(1.0f), v_imax0(v_iadd(*es, v_set1(LN_EXP_BITS_M64))));
#endif
    return v_fma(*es, v_set1(LN_EXP_UNSCALE), v_set1(1.0f));
}

/* f = x sigmoid(w): x / (1 + e) for x >= 0 (x may be +Inf there), ((x E) / (1 + e)) 2^-64
   below, the factors chosen first: one quotient, and a rounding fewer than forming
   1 / (1 + e) and multiplying. AVX-512, Zen 4, hot, time reciprocal-then-products / this:
   1.10-1.12x (1.06x of it the divide itself, avx512_vocab.h); AVX2, which divided
   already, 0.98-1.00x. The argument uses x clamped to [-20, 20] (no Inf - Inf in the
   float-float parts). Its scalings stay multiplies: with tanh_parts' integer adds the
   AVX-512 loop ran 0.88x (exp_av's alone 0.93x; Zen 4, hot, time multiplies / adds;
   Zen 5 0.89x), where the backward's gained. */
LN_INLINE V gelu_tanh(V x)
{
    const V xa = clamp(x), xc = clamp_lo(x), one = v_set1(1.0f);
    V es, x2;
    const V den = tanh_parts(xa, &es, &x2, 0);
    const V q = v_quot(v_mul(xc, v_select_ge0(xa, one, es)), den);
    return v_mul(q, v_select_ge0(xa, one, v_set1(LN_EXP_UNSCALE)));
}

/* f' = sigmoid + x w' sigmoid (1 - sigmoid), w' = 2C + 6CK x^2, in units of 2^-64
   until the last product (r 2^64 is exact). For x < 0, sigmoid = e r and the terms have
   opposite signs (f' = 0 at x ~ -0.75): sigmoid's rounding would cost up to an ulp of
   f' (sigmoid ~ 0.4 > f' near x = -0.36), so its exact low part (fms) joins the other
   term before the one sum. Below -1, where the other term is the larger, that costs up to
   an ulp (8.3 measured there against the 11 bound); keeping the plain fma there by a
   select measured 4 instructions more per vector, on a loop that is compute-bound. Both
   sides share one fma, its addend (r 2^64, or the low part) chosen first: the loop is
   bound by the multiply-add pipes, and selects run beside them. Where the vocabulary has
   integer adds (LN_GELU_EXP_IADD) the exact powers of two are taken by them (r 2^64,
   r being in [1/2, 1]; tanh_parts): three multiplies fewer a vector, the same bits.
   AVX-512, Zen 4, hot, 64 Ki floats, time multiplies / adds: 1.12-1.15x (the two in
   exp_av and on r alone 1.05-1.07x; Zen 5, two multiply-add pipes, 1.03-1.09x); AVX2
   0.985-0.996x, so it keeps the multiplies. */
LN_INLINE V gelu_tanh_grad(V x)
{
    const V xa = clamp(x);
    V es, x2;
    const V r = v_quot(v_set1(1.0f), tanh_parts(xa, &es, &x2, LN_GELU_IADD));
#ifdef LN_GELU_EXP_IADD
    const V r64 = v_iadd(r, v_set1(LN_EXP_BITS_P64));
#else
    const V r64 = v_mul(r, v_set1(LN_EXP_SCALE));
#endif
    const V er = v_mul(es, r);
    const V xdw = v_mul(xa, v_fma(vset(3.0 * LN_GELU_2CK), x2, vset(LN_GELU_2C)));
    const V err = v_mul(er, r), erl = v_fms(es, r, er);
    const V w = v_fma(xdw, err, v_select_ge0(xa, r64, erl));
    return v_mul(v_select_ge0(xa, w, v_add(er, w)), v_set1(LN_EXP_UNSCALE));
}

/* The erf form's q = 0.5 erfc(t) for t = |x| / sqrt 2, returned as q 2^65 = exp(-t^2)
   erfcx(t) 2^64 (the 0.5 goes into the callers' final 2^-65): exp(-t^2) = exp(-x^2/2)
   taken from -x^2/2 split exactly (a + al, as (x/2) (-x): x/2 is exact wherever x^2
   matters) as exp(a) (1 + al), and erfcx evaluated at |x| itself (gelu_math.h), so t is
   never rounded. The correction and exp's low part are summed first and exp's 2^(n+64)
   applied last, so q takes one rounding after the division. Phi(x) = 0.5 erfc(-x / sqrt 2)
   is then q for x < 0 and 1 - q for x >= 0: neither cancels. For the backward (dens
   non-NULL): *dens gets exp(-x^2/2) 2^65 / sqrt(2 pi), the density, rounded once too
   (2 / sqrt(2 pi) split in two floats), and for x < 0 the value returned is q + x dens
   instead of q (the backward needs q itself only for x >= 0), x dens joined to q's small
   terms before q's one rounding: the two have opposite signs there (f' = 0 at x ~ -0.75)
   and q's own rounding would cost up to an ulp of f' (q ~ 0.33 > 2 f' near x = -0.4).
   Those terms are selected, not both sums rounded: the loops are bound by the
   multiply-add pipes. */
LN_INLINE V erf_q(V x, V *dens)
{
    const V ax = v_abs(x);
    const V sh = vset(LN_GELU_HI(LN_GELU_SQRTPI_2)), sl = vset(LN_GELU_LO(LN_GELU_SQRTPI_2));
    const V tp = v_mul(ax, sh), tpl = v_fma(ax, sl, v_fms(ax, sh, tp));
    const V xh = v_mul(v_set1(0.5f), x), nx = v_xor(x, v_set1(-0.0f));
    const V a = v_mul(xh, nx), al = v_fms(xh, nx, a);
    V el, sc, rlo;
    const V eh = exp_scaled(a, &el, &sc);
    const V r = erfcx(ax, tp, tpl, &rlo);
    V small = v_fma(eh, v_fma(al, r, rlo), v_mul(el, r));
    if (dens) {
        const V kh = vset(LN_GELU_HI(2 * LN_GELU_RSQRT2PI)), kl = vset(LN_GELU_LO(2 * LN_GELU_RSQRT2PI));
        const V d = v_fma(eh, kh, v_fma(eh, kl, v_mul(kh, v_fma(al, eh, el))));
        *dens = v_mul(d, sc);
        small = v_select_ge0(x, small, v_fma(x, d, small));
    }
    return v_mul(v_fma(eh, r, small), sc);
}

/* f = x Phi: (x (1 - q)) 1 for x >= 0 (x may be +Inf), (x q 2^65) 2^-65 below: the
   factors chosen first, so both sides share one pair of multiplies. */
LN_INLINE V gelu_erf(V x)
{
    const V xa = clamp(x), xc = clamp_lo(x), unscale = v_set1(0.5f * LN_EXP_UNSCALE);
    const V qs = erf_q(xa, NULL);
    const V phi = v_select_ge0(xa, v_fnma(qs, unscale, v_set1(1.0f)), qs);
    return v_mul(v_mul(xc, phi), v_select_ge0(xa, v_set1(1.0f), unscale));
}

/* f' = Phi + x exp(-x^2/2) / sqrt(2 pi), in units of 2^-65 until the last product
   (2^65 - q 2^65 rounds as 1 - q does; below 0 erf_q forms the sum). */
LN_INLINE V gelu_erf_grad(V x)
{
    const V xa = clamp(x);
    V dens;
    const V g = erf_q(xa, &dens);
    const V pos = v_fma(xa, dens, v_sub(v_set1(2.0f * LN_EXP_SCALE), g));
    return v_mul(v_select_ge0(xa, pos, g), v_set1(0.5f * LN_EXP_UNSCALE));
}

/* One loop per kind and direction (and for the forward, store), from element i on:
   NV vectors per iteration (unrolled, so the scheduler sees independent chains side by
   side; the compiler's own heuristics keep ~90-instruction bodies rolled), then single
   vectors, then one masked tail. The forward's ST stores a whole vector: v_store,
   or v_stream for outputs past the cache (no read for ownership of their lines; the
   caller aligns i), whose loops also prefetch (PF) x LN_GELU_PF floats ahead, a line at
   a time. Measured cold (64 MiB, Intel, AVX-512, against ordinary stores): streamed
   without the prefetches the forward ran 1.5x slower (the streamed lines hold line fill
   buffers that x's misses wait for), with them 0.83-0.89x; ordinary stores gained
   nothing from the prefetches. The backward stays on ordinary stores: streamed it ran
   1.00x, 0.98x with x prefetched, 1.2-1.3x slower with dy and x both prefetched. */
#define LN_GELU_PF 1024
LN_INLINE void gelu_prefetch(const float *p, size_t i, size_t floats)
{
    for (size_t l = 0; l < floats; l += 64 / sizeof(float))
        __builtin_prefetch(p + i + LN_GELU_PF + l, 0, 0);
}

#ifndef LN_GELU_NV_TANH
#define LN_GELU_NV_TANH LN_GELU_NV
#endif

/*
 * An iteration's NV results (VAL, of j), all computed before any is stored (PUT, of j and
 * v_). Stored as computed, each store stood between one vector's loads and the next's:
 * the compiler cannot move a load above a store that may alias it, so it emitted the
 * chains one after another, and the core overlapped only about two (their latency, not
 * the multiply pipes, bound the loops). Computed first, the chains are independent code
 * that early scheduling (cmake/LnKernels.cmake) interleaves. Zen 5, hot, one thread, time
 * against the stored-as-computed loops of four (AVX2: two) vectors: AVX-512 0.71x (tanh
 * forward), 0.70x (tanh backward), 0.87x (erf forward), 0.81x (erf backward); AVX2 0.78x,
 * 0.79x, 0.95x, 0.91x (with the vector counts of the vocabularies). SVE's sizeless
 * vectors form no arrays: there each is stored as computed.
 */
#ifdef LN_GELU_SIZELESS
#define LN_GELU_GROUP(NV, VAL, PUT)                                                          \
    _Pragma("GCC unroll 8") for (size_t j = 0; j < (NV); j++)                                \
    {                                                                                        \
        const V v_ = VAL;                                                                    \
        PUT;                                                                                 \
    }
#else
#define LN_GELU_GROUP(NV, VAL, PUT)                                                          \
    {                                                                                        \
        V vs_[NV];                                                                           \
        _Pragma("GCC unroll 8") for (size_t j = 0; j < (NV); j++) vs_[j] = VAL;              \
        _Pragma("GCC unroll 8") for (size_t j = 0; j < (NV); j++)                            \
        {                                                                                    \
            const V v_ = vs_[j];                                                             \
            PUT;                                                                             \
        }                                                                                    \
    }
#endif

#define LN_GELU_FWD_LOOP(name, F, ST, PF, NV)                                                \
    static void name(const float *x, float *y, size_t n, size_t i)                           \
    {                                                                                        \
        for (; i + (NV) * LN_W <= n; i += (NV) * LN_W) {                                     \
            if (PF)                                                                          \
                gelu_prefetch(x, i, (NV) * LN_W);                                            \
            LN_GELU_GROUP(NV, F(v_load(x + i + j * LN_W)), ST(y + i + j * LN_W, v_))         \
        }                                                                                    \
        for (; i + LN_W <= n; i += LN_W)                                                     \
            ST(y + i, F(v_load(x + i)));                                                     \
        if (i < n) {                                                                         \
            const VM k = v_tailmask((unsigned)(n - i));                                      \
            v_storem(y + i, k, F(v_loadm(x + i, k)));                                        \
        }                                                                                    \
    }
#define LN_GELU_BWD_LOOP(name, G, NV)                                                        \
    static void name(const float *dy, const float *x, float *dx, size_t n)                   \
    {                                                                                        \
        size_t i = 0;                                                                        \
        for (; i + (NV) * LN_W <= n; i += (NV) * LN_W)                                       \
            LN_GELU_GROUP(NV, v_mul(v_load(dy + i + j * LN_W), G(v_load(x + i + j * LN_W))), \
                          v_store(dx + i + j * LN_W, v_))                                    \
        for (; i + LN_W <= n; i += LN_W)                                                     \
            v_store(dx + i, v_mul(v_load(dy + i), G(v_load(x + i))));                        \
        if (i < n) {                                                                         \
            const VM k = v_tailmask((unsigned)(n - i));                                      \
            const V g = G(v_loadm(x + i, k));                                                \
            v_storem(dx + i, k, v_mul(v_loadm(dy + i, k), g));                               \
        }                                                                                    \
    }

LN_GELU_FWD_LOOP(gelu_fwd_tanh, gelu_tanh, v_store, 0, LN_GELU_NV_TANH)
LN_GELU_FWD_LOOP(gelu_fwd_erf, gelu_erf, v_store, 0, LN_GELU_NV)
LN_GELU_BWD_LOOP(gelu_bwd_tanh, gelu_tanh_grad, LN_GELU_NV_TANH)
LN_GELU_BWD_LOOP(gelu_bwd_erf, gelu_erf_grad, LN_GELU_NV)

/* Streaming outputs (LN_GELU_NT) where the vocabulary has non-temporal stores: x86. */
#if defined LN_VALIGN && (defined __x86_64__ || defined __i386__)
#define LN_GELU_STREAMS 1
LN_GELU_FWD_LOOP(gelu_fwd_tanh_nt, gelu_tanh, v_stream, 1, LN_GELU_NV_TANH)
LN_GELU_FWD_LOOP(gelu_fwd_erf_nt, gelu_erf, v_stream, 1, LN_GELU_NV)

/* Where streaming starts: the elements before out's first LN_VALIGN boundary (they go out
   first, masked, with an ordinary store), or n when the call does not stream (no
   LN_GELU_NT, out not float-aligned, or no whole aligned vector). */
LN_INLINE size_t gelu_stream_head(const float *out, size_t n, int kind)
{
    const uintptr_t mis = (uintptr_t)out % LN_VALIGN;
    const size_t h = mis ? (LN_VALIGN - mis) / sizeof(float) : 0;
    return !(kind & LN_GELU_NT) || mis % sizeof(float) || h + LN_W > n ? n : h;
}
#else
#define LN_GELU_STREAMS 0
#endif

/* Every element gets the same operations whichever loop, lane or store it meets. */
static void gelu_forward(const float *x, float *y, size_t n, int kind)
{
    const int erf = (kind & ~LN_GELU_NT) == LN_GELU_ERF;
#if LN_GELU_STREAMS
    const size_t h = gelu_stream_head(y, n, kind);
    if (h < n) {
        if (h) {
            const VM k = v_tailmask((unsigned)h);
            const V v = v_loadm(x, k);
            v_storem(y, k, erf ? gelu_erf(v) : gelu_tanh(v));
        }
        if (erf)
            gelu_fwd_erf_nt(x, y, n, h);
        else
            gelu_fwd_tanh_nt(x, y, n, h);
        v_nt_fence(); /* the streamed lines ordered before the call returns */
        return;
    }
#endif
    if (erf)
        gelu_fwd_erf(x, y, n, 0);
    else
        gelu_fwd_tanh(x, y, n, 0);
}

static void gelu_backward(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    if (kind == LN_GELU_ERF)
        gelu_bwd_erf(dy, x, dx, n);
    else
        gelu_bwd_tanh(dy, x, dx, n);
}

#endif /* LN_KERNELS_GELU_BODY_H */
