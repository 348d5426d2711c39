/* gelu_avx2.c - GELU forward/backward with AVX2+FMA on SLEEF's vector exp and erfc. */
#include <immintrin.h>
#include <sleef.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 8

static inline __m256 vset(double c) { return _mm256_set1_ps((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
static inline __m256 clamp_lo(__m256 x) { return _mm256_max_ps(_mm256_set1_ps(-LN_GELU_CLAMP), x); }
static inline __m256 clamp(__m256 x) { return _mm256_min_ps(_mm256_set1_ps(LN_GELU_CLAMP), clamp_lo(x)); }

/* sigmoid(w) with e = exp(-|w|) <= 1 (gelu.h); *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline __m256 sigmoid(__m256 w, __m256 *ds)
{
    const __m256 e = Sleef_expf8_u10avx2(_mm256_or_ps(w, _mm256_set1_ps(-0.0f)));
    const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    *ds = _mm256_mul_ps(_mm256_mul_ps(e, r), r);
    return _mm256_blendv_ps(_mm256_mul_ps(e, r), r, _mm256_cmp_ps(w, _mm256_setzero_ps(), _CMP_GE_OQ));
}

static inline __m256 gelu(__m256 x, int kind)
{
    const __m256 xc = clamp_lo(x);
    if (kind == LN_GELU_ERF)
        return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), xc),
                             Sleef_erfcf8_u15avx2(_mm256_mul_ps(xc, vset(-LN_GELU_RSQRT2))));
    const __m256 x2 = _mm256_mul_ps(xc, xc);
    __m256 ds; /* unused here: the compiler drops it */
    const __m256 w = _mm256_mul_ps(_mm256_mul_ps(vset(LN_GELU_2C), xc),
                                   _mm256_fmadd_ps(vset(LN_GELU_K), x2, _mm256_set1_ps(1.0f)));
    return _mm256_mul_ps(xc, sigmoid(w, &ds));
}

static inline __m256 gelu_grad(__m256 x, int kind)
{
    const __m256 xc = clamp(x), x2 = _mm256_mul_ps(xc, xc);
    if (kind == LN_GELU_ERF) {
        const __m256 half_erfc = _mm256_mul_ps(_mm256_set1_ps(0.5f),
                                               Sleef_erfcf8_u15avx2(_mm256_mul_ps(xc, vset(-LN_GELU_RSQRT2))));
        const __m256 pdf = _mm256_mul_ps(Sleef_expf8_u10avx2(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x2)),
                                         vset(LN_GELU_RSQRT2PI));
        return _mm256_fmadd_ps(xc, pdf, half_erfc);
    }
    const __m256 w = _mm256_mul_ps(_mm256_mul_ps(vset(LN_GELU_2C), xc),
                                   _mm256_fmadd_ps(vset(LN_GELU_K), x2, _mm256_set1_ps(1.0f)));
    const __m256 dw = _mm256_mul_ps(vset(LN_GELU_2C), _mm256_fmadd_ps(vset(3.0 * LN_GELU_K), x2, _mm256_set1_ps(1.0f)));
    __m256 ds;
    const __m256 s = sigmoid(w, &ds);
    return _mm256_fmadd_ps(_mm256_mul_ps(xc, dw), ds, s);
}

static inline __m256i lane_mask(size_t len)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)len), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static void forward_avx2_gelu(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(y + i, gelu(_mm256_loadu_ps(x + i), kind));
    if (i < n) {
        const __m256i k = lane_mask(n - i);
        _mm256_maskstore_ps(y + i, k, gelu(_mm256_maskload_ps(x + i, k), kind));
    }
}

static void backward_avx2_gelu(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), gelu_grad(_mm256_loadu_ps(x + i), kind)));
    if (i < n) {
        const __m256i k = lane_mask(n - i);
        const __m256 g = gelu_grad(_mm256_maskload_ps(x + i, k), kind);
        _mm256_maskstore_ps(dx + i, k, _mm256_mul_ps(_mm256_maskload_ps(dy + i, k), g));
    }
}

const ln_gelu_kernels ln_gelu_kernels_avx2 = {
    .isa = LN_ISA_AVX2,
    .forward = forward_avx2_gelu,
    .backward = backward_avx2_gelu,
};
