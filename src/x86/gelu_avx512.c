/* gelu_avx512.c - GELU forward/backward with AVX-512 on SLEEF's vector exp and erfc. */
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 16

static inline __m512 vset(double c) { return _mm512_set1_ps((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): this operand order passes NaN on. */
static inline __m512 clamp_lo(__m512 x) { return _mm512_max_ps(_mm512_set1_ps(-LN_GELU_CLAMP), x); }
static inline __m512 clamp(__m512 x) { return _mm512_min_ps(_mm512_set1_ps(LN_GELU_CLAMP), clamp_lo(x)); }

/* sigmoid(w) with e = exp(-|w|) <= 1 (gelu.h); *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline __m512 sigmoid(__m512 w, __m512 *ds)
{
    const __m512 e = Sleef_expf16_u10avx512f(_mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(w), _mm512_set1_epi32(INT32_MIN))));
    const __m512 r = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    *ds = _mm512_mul_ps(_mm512_mul_ps(e, r), r);
    return _mm512_mask_mov_ps(_mm512_mul_ps(e, r), _mm512_cmp_ps_mask(w, _mm512_setzero_ps(), _CMP_GE_OQ), r);
}

static inline __m512 gelu(__m512 x, int kind)
{
    const __m512 xc = clamp_lo(x);
    if (kind == LN_GELU_ERF)
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), xc),
                             Sleef_erfcf16_u15avx512f(_mm512_mul_ps(xc, vset(-LN_GELU_RSQRT2))));
    const __m512 x2 = _mm512_mul_ps(xc, xc);
    __m512 ds; /* unused here: the compiler drops it */
    const __m512 w = _mm512_mul_ps(_mm512_mul_ps(vset(LN_GELU_2C), xc),
                                   _mm512_fmadd_ps(vset(LN_GELU_K), x2, _mm512_set1_ps(1.0f)));
    return _mm512_mul_ps(xc, sigmoid(w, &ds));
}

static inline __m512 gelu_grad(__m512 x, int kind)
{
    const __m512 xc = clamp(x), x2 = _mm512_mul_ps(xc, xc);
    if (kind == LN_GELU_ERF) {
        const __m512 half_erfc = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                                               Sleef_erfcf16_u15avx512f(_mm512_mul_ps(xc, vset(-LN_GELU_RSQRT2))));
        const __m512 pdf = _mm512_mul_ps(Sleef_expf16_u10avx512f(_mm512_mul_ps(_mm512_set1_ps(-0.5f), x2)),
                                         vset(LN_GELU_RSQRT2PI));
        return _mm512_fmadd_ps(xc, pdf, half_erfc);
    }
    const __m512 w = _mm512_mul_ps(_mm512_mul_ps(vset(LN_GELU_2C), xc),
                                   _mm512_fmadd_ps(vset(LN_GELU_K), x2, _mm512_set1_ps(1.0f)));
    const __m512 dw = _mm512_mul_ps(vset(LN_GELU_2C), _mm512_fmadd_ps(vset(3.0 * LN_GELU_K), x2, _mm512_set1_ps(1.0f)));
    __m512 ds;
    const __m512 s = sigmoid(w, &ds);
    return _mm512_fmadd_ps(_mm512_mul_ps(xc, dw), ds, s);
}

static inline __mmask16 lane_mask(size_t len) { return (__mmask16)((1u << len) - 1u); }

static void forward_avx512_gelu(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(y + i, gelu(_mm512_loadu_ps(x + i), kind));
    if (i < n) {
        const __mmask16 k = lane_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, gelu(_mm512_maskz_loadu_ps(k, x + i), kind));
    }
}

static void backward_avx512_gelu(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(dx + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i), gelu_grad(_mm512_loadu_ps(x + i), kind)));
    if (i < n) {
        const __mmask16 k = lane_mask(n - i);
        const __m512 g = gelu_grad(_mm512_maskz_loadu_ps(k, x + i), kind);
        _mm512_mask_storeu_ps(dx + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + i), g));
    }
}

const ln_gelu_kernels ln_gelu_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .forward = forward_avx512_gelu,
    .backward = backward_avx512_gelu,
};
