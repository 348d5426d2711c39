/* gelu_avx2.c - GELU forward/backward with AVX2+FMA on SLEEF's vector exp and erfc. */
#include <immintrin.h>
#include <sleef.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 8

static inline __m256 vset(double c) { return _mm256_set1_ps((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
static inline __m256 clamp_lo(__m256 x) { return _mm256_max_ps(_mm256_set1_ps(-LN_GELU_CLAMP), x); }
static inline __m256 clamp(__m256 x)
{
    return _mm256_min_ps(_mm256_set1_ps(LN_GELU_CLAMP), clamp_lo(x));
}

static inline __m256 fms(__m256 a, __m256 b, __m256 c) { return _mm256_fmsub_ps(a, b, c); }

/* w = 2u = 2C x + 2CK x^3 as hi + *lo (gelu.h): exact products by fma, one two-sum. */
static inline __m256 arg_w(__m256 x, __m256 *lo)
{
    const __m256 c1h = vset(LN_GELU_HI(LN_GELU_2C)), c1l = vset(LN_GELU_LO(LN_GELU_2C));
    const __m256 c3h = vset(LN_GELU_HI(LN_GELU_2CK)), c3l = vset(LN_GELU_LO(LN_GELU_2CK));
    const __m256 x2h = _mm256_mul_ps(x, x), x2l = fms(x, x, x2h);
    const __m256 x3h = _mm256_mul_ps(x2h, x), x3l = _mm256_fmadd_ps(x2l, x, fms(x2h, x, x3h));
    const __m256 t1h = _mm256_mul_ps(c1h, x), t1l = _mm256_fmadd_ps(c1l, x, fms(c1h, x, t1h));
    const __m256 t3h = _mm256_mul_ps(c3h, x3h);
    const __m256 t3l = _mm256_fmadd_ps(c3h, x3l, _mm256_fmadd_ps(c3l, x3h, fms(c3h, x3h, t3h)));
    const __m256 hi = _mm256_add_ps(t1h, t3h), bv = _mm256_sub_ps(hi, t1h);
    const __m256 err =
        _mm256_add_ps(_mm256_sub_ps(t1h, _mm256_sub_ps(hi, bv)), _mm256_sub_ps(t3h, bv));
    *lo = _mm256_add_ps(err, _mm256_add_ps(t1l, t3l));
    return hi;
}

/* sigmoid(hi + lo) with e = exp(-|w|) <= 1 (gelu.h), e = exp(-|hi|) (1 -+ lo);
 *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline __m256 sigmoid(__m256 hi, __m256 lo, __m256 *ds)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 e0 = Sleef_expf8_u10avx2(_mm256_or_ps(hi, sign));
    const __m256 e = _mm256_fmadd_ps(e0, _mm256_xor_ps(lo, _mm256_andnot_ps(hi, sign)), e0);
    const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    *ds = _mm256_mul_ps(_mm256_mul_ps(e, r), r);
    return _mm256_blendv_ps(_mm256_mul_ps(e, r), r,
                            _mm256_cmp_ps(hi, _mm256_setzero_ps(), _CMP_GE_OQ));
}

/* 0.5 erfc(-x / sqrt 2) with z = hi + lo, and e = exp(-x^2 / 2) = exp(-z^2) (1 -+ ...),
   which the backward's pdf shares. */
static inline __m256 half_erfc(__m256 x, __m256 *e)
{
    const __m256 rh = vset(-LN_GELU_HI(LN_GELU_RSQRT2)), rl = vset(-LN_GELU_LO(LN_GELU_RSQRT2));
    const __m256 zh = _mm256_mul_ps(x, rh), zl = _mm256_fmadd_ps(x, rl, fms(x, rh, zh));
    const __m256 x2h = _mm256_mul_ps(x, x), x2l = fms(x, x, x2h);
    const __m256 e0 = Sleef_expf8_u10avx2(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x2h));
    *e = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x2l), e0, e0);
    const __m256 corr = _mm256_mul_ps(_mm256_mul_ps(zl, vset(LN_GELU_2RSQRTPI)), *e);
    return _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_sub_ps(Sleef_erfcf8_u15avx2(zh), corr));
}

/* The argument uses x clamped to [-20, 20] (no Inf - Inf in the float-float parts); the
   factor x only below, so f(+Inf) = +Inf. */
static inline __m256 gelu(__m256 x, int kind)
{
    const __m256 xa = clamp(x), xc = clamp_lo(x);
    if (kind == LN_GELU_ERF) {
        __m256 e;
        return _mm256_mul_ps(xc, half_erfc(xa, &e));
    }
    __m256 lo, ds; /* ds unused here: the compiler drops it */
    const __m256 hi = arg_w(xa, &lo);
    return _mm256_mul_ps(xc, sigmoid(hi, lo, &ds));
}

static inline __m256 gelu_grad(__m256 x, int kind)
{
    const __m256 xa = clamp(x);
    if (kind == LN_GELU_ERF) {
        __m256 e;
        const __m256 h = half_erfc(xa, &e);
        return _mm256_fmadd_ps(xa, _mm256_mul_ps(e, vset(LN_GELU_RSQRT2PI)), h);
    }
    const __m256 x2 = _mm256_mul_ps(xa, xa);
    const __m256 dw = _mm256_mul_ps(
        vset(LN_GELU_2C), _mm256_fmadd_ps(vset(3.0 * LN_GELU_K), x2, _mm256_set1_ps(1.0f)));
    __m256 lo, ds;
    const __m256 hi = arg_w(xa, &lo);
    const __m256 s = sigmoid(hi, lo, &ds);
    return _mm256_fmadd_ps(_mm256_mul_ps(xa, dw), ds, s);
}

static inline __m256i lane_mask(size_t len)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)len),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void ln_gelu_forward_avx2(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(y + i, gelu(_mm256_loadu_ps(x + i), kind));
    if (i < n) {
        const __m256i k = lane_mask(n - i);
        _mm256_maskstore_ps(y + i, k, gelu(_mm256_maskload_ps(x + i, k), kind));
    }
}

void ln_gelu_backward_avx2(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i),
                                               gelu_grad(_mm256_loadu_ps(x + i), kind)));
    if (i < n) {
        const __m256i k = lane_mask(n - i);
        const __m256 g = gelu_grad(_mm256_maskload_ps(x + i, k), kind);
        _mm256_maskstore_ps(dx + i, k, _mm256_mul_ps(_mm256_maskload_ps(dy + i, k), g));
    }
}
