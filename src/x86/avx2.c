/* avx2.c - LayerNorm forward and backward kernels for AVX2 + FMA (8 float lanes). */
#include <immintrin.h>

#include "ln_internal.h"

typedef __m256 V;
typedef __m256i VM;
#define LN_W 8
#define LN_LOG2W 3
#define LN_KBIG 4 /* 8 of the 16 ymm registers, the rest for the apply riding along */
#define LN_RFWD 4 /* 4 rows x 2 accumulators x (mean, M2): all 16 registers, some spills, still faster */
#define LN_RBWD 2

/* maskload/maskstore never touch a masked-off lane, so tails stay inside the row. */
static const int ln_mask_table[2 * LN_W] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

static inline V v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline V v_loadm(const float *p, VM m) { return _mm256_maskload_ps(p, m); }
static inline void v_store(float *p, V v) { _mm256_storeu_ps(p, v); }
static inline void v_storem(float *p, VM m, V v) { _mm256_maskstore_ps(p, m, v); }
static inline V v_set1(float f) { return _mm256_set1_ps(f); }
static inline V v_zero(void) { return _mm256_setzero_ps(); }
static inline V v_add(V a, V b) { return _mm256_add_ps(a, b); }
static inline V v_sub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V v_subz(V a, V b, VM m) { return _mm256_and_ps(_mm256_sub_ps(a, b), _mm256_castsi256_ps(m)); }
static inline V v_mul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V v_fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V v_fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
static inline float v_lane0(V v) { return _mm256_cvtss_f32(v); }
static inline VM v_tailmask(unsigned t)
{
    return _mm256_loadu_si256((const __m256i *)(ln_mask_table + LN_W - t));
}

/* Lanes l + 4, l + 2, l + 1 moved down to lane l (levels 0, 1, 2). */
static inline V v_fold(V v, unsigned level)
{
    if (level == 0)
        return _mm256_permute2f128_ps(v, v, 0x01);
    if (level == 1)
        return _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
    return _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
}

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

const ln_kernels ln_kernels_avx2 = {
    .isa = LN_ISA_AVX2,
    .name = "avx2",
    .forward = forward_kernel,
    .backward = backward_kernel,
};
