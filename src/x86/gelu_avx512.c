/* gelu_avx512.c - GELU forward/backward with AVX-512 on SLEEF's vector exp and erfc. */
#include <immintrin.h>
#include <sleef.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 16

static inline __m512 vset(double c) { return _mm512_set1_ps((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
static inline __m512 clamp_lo(__m512 x) { return _mm512_max_ps(_mm512_set1_ps(-LN_GELU_CLAMP), x); }
static inline __m512 clamp(__m512 x)
{
    return _mm512_min_ps(_mm512_set1_ps(LN_GELU_CLAMP), clamp_lo(x));
}

static inline __m512 fms(__m512 a, __m512 b, __m512 c) { return _mm512_fmsub_ps(a, b, c); }

/* w = 2u = 2C x + 2CK x^3 as hi + *lo (gelu.h): exact products by fma, one two-sum. */
static inline __m512 arg_w(__m512 x, __m512 *lo)
{
    const __m512 c1h = vset(LN_GELU_HI(LN_GELU_2C)), c1l = vset(LN_GELU_LO(LN_GELU_2C));
    const __m512 c3h = vset(LN_GELU_HI(LN_GELU_2CK)), c3l = vset(LN_GELU_LO(LN_GELU_2CK));
    const __m512 x2h = _mm512_mul_ps(x, x), x2l = fms(x, x, x2h);
    const __m512 x3h = _mm512_mul_ps(x2h, x), x3l = _mm512_fmadd_ps(x2l, x, fms(x2h, x, x3h));
    const __m512 t1h = _mm512_mul_ps(c1h, x), t1l = _mm512_fmadd_ps(c1l, x, fms(c1h, x, t1h));
    const __m512 t3h = _mm512_mul_ps(c3h, x3h);
    const __m512 t3l = _mm512_fmadd_ps(c3h, x3l, _mm512_fmadd_ps(c3l, x3h, fms(c3h, x3h, t3h)));
    const __m512 hi = _mm512_add_ps(t1h, t3h), bv = _mm512_sub_ps(hi, t1h);
    const __m512 err =
        _mm512_add_ps(_mm512_sub_ps(t1h, _mm512_sub_ps(hi, bv)), _mm512_sub_ps(t3h, bv));
    *lo = _mm512_add_ps(err, _mm512_add_ps(t1l, t3l));
    return hi;
}

/* sigmoid(hi + lo) with e = exp(-|w|) <= 1 (gelu.h), e = exp(-|hi|) (1 -+ lo);
 *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline __m512 sigmoid(__m512 hi, __m512 lo, __m512 *ds)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 e0 = Sleef_expf16_u10avx512f(_mm512_or_ps(hi, sign));
    const __m512 e = _mm512_fmadd_ps(e0, _mm512_xor_ps(lo, _mm512_andnot_ps(hi, sign)), e0);
    const __m512 r = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    *ds = _mm512_mul_ps(_mm512_mul_ps(e, r), r);
    return _mm512_mask_mov_ps(_mm512_mul_ps(e, r),
                              _mm512_cmp_ps_mask(hi, _mm512_setzero_ps(), _CMP_GE_OQ), r);
}

/* 0.5 erfc(-x / sqrt 2) with z = hi + lo, and e = exp(-x^2 / 2) = exp(-z^2) (1 -+ ...),
   which the backward's pdf shares. */
static inline __m512 half_erfc(__m512 x, __m512 *e)
{
    const __m512 rh = vset(-LN_GELU_HI(LN_GELU_RSQRT2)), rl = vset(-LN_GELU_LO(LN_GELU_RSQRT2));
    const __m512 zh = _mm512_mul_ps(x, rh), zl = _mm512_fmadd_ps(x, rl, fms(x, rh, zh));
    const __m512 x2h = _mm512_mul_ps(x, x), x2l = fms(x, x, x2h);
    const __m512 e0 = Sleef_expf16_u10avx512f(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x2h));
    *e = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x2l), e0, e0);
    const __m512 corr = _mm512_mul_ps(_mm512_mul_ps(zl, vset(LN_GELU_2RSQRTPI)), *e);
    return _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_sub_ps(Sleef_erfcf16_u15avx512f(zh), corr));
}

/* The argument uses x clamped to [-20, 20] (no Inf - Inf in the float-float parts); the
   factor x only below, so f(+Inf) = +Inf. */
static inline __m512 gelu(__m512 x, int kind)
{
    const __m512 xa = clamp(x), xc = clamp_lo(x);
    if (kind == LN_GELU_ERF) {
        __m512 e;
        return _mm512_mul_ps(xc, half_erfc(xa, &e));
    }
    __m512 lo, ds; /* ds unused here: the compiler drops it */
    const __m512 hi = arg_w(xa, &lo);
    return _mm512_mul_ps(xc, sigmoid(hi, lo, &ds));
}

static inline __m512 gelu_grad(__m512 x, int kind)
{
    const __m512 xa = clamp(x);
    if (kind == LN_GELU_ERF) {
        __m512 e;
        const __m512 h = half_erfc(xa, &e);
        return _mm512_fmadd_ps(xa, _mm512_mul_ps(e, vset(LN_GELU_RSQRT2PI)), h);
    }
    const __m512 x2 = _mm512_mul_ps(xa, xa);
    const __m512 dw = _mm512_mul_ps(
        vset(LN_GELU_2C), _mm512_fmadd_ps(vset(3.0 * LN_GELU_K), x2, _mm512_set1_ps(1.0f)));
    __m512 lo, ds;
    const __m512 hi = arg_w(xa, &lo);
    const __m512 s = sigmoid(hi, lo, &ds);
    return _mm512_fmadd_ps(_mm512_mul_ps(xa, dw), ds, s);
}

static inline __mmask16 lane_mask(size_t len) { return (__mmask16)((1u << len) - 1u); }

void ln_gelu_forward_avx512(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(y + i, gelu(_mm512_loadu_ps(x + i), kind));
    if (i < n) {
        const __mmask16 k = lane_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, gelu(_mm512_maskz_loadu_ps(k, x + i), kind));
    }
}

void ln_gelu_backward_avx512(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(dx + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i),
                                               gelu_grad(_mm512_loadu_ps(x + i), kind)));
    if (i < n) {
        const __mmask16 k = lane_mask(n - i);
        const __m512 g = gelu_grad(_mm512_maskz_loadu_ps(k, x + i), kind);
        _mm512_mask_storeu_ps(dx + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + i), g));
    }
}
