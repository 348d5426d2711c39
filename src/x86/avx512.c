/* avx512.c - LayerNorm forward and backward kernels for AVX-512 F/BW/VL/DQ (16 lanes). */
#include <immintrin.h>

#include "ln_internal.h"

typedef __m512 V;
typedef __mmask16 VM;
#define LN_W 16
#define LN_LOG2W 4
#define LN_KBIG 8 /* 16 of the 32 zmm registers */
#define LN_RFWD 4 /* 4 rows x 2 accumulators x (mean, M2) = 16 registers */
#define LN_RBWD 4

/* Opmask loads and stores suppress faults on masked-off lanes: tails stay in the row. */
static inline V v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline V v_loadm(const float *p, VM m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline void v_storem(float *p, VM m, V v) { _mm512_mask_storeu_ps(p, m, v); }
static inline V v_set1(float f) { return _mm512_set1_ps(f); }
static inline V v_zero(void) { return _mm512_setzero_ps(); }
static inline V v_add(V a, V b) { return _mm512_add_ps(a, b); }
static inline V v_sub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V v_subz(V a, V b, VM m) { return _mm512_maskz_sub_ps(m, a, b); }
static inline V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V v_fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
static inline float v_lane0(V v) { return _mm512_cvtss_f32(v); }
static inline VM v_tailmask(unsigned t) { return (VM)((1u << t) - 1u); }

/* Lanes l + 8, l + 4, l + 2, l + 1 moved down to lane l (levels 0 to 3). */
static inline V v_fold(V v, unsigned level)
{
    if (level == 0)
        return _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2));
    if (level == 1)
        return _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1));
    if (level == 2)
        return _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
    return _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
}

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

const ln_kernels ln_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .name = "avx512",
    .forward = forward_kernel,
    .backward = backward_kernel,
};
