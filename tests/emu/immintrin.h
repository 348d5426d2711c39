/* immintrin.h - scalar stand-ins for the AVX-512 intrinsics src/x86/avx512.c uses (test builds only). */
#ifndef LN_EMU_IMMINTRIN_H
#define LN_EMU_IMMINTRIN_H

/*
 * CPUs of this project's machine kind lack AVX-512, so the kernel's 16-lane logic (opmask
 * tails, lane folds, the merge plan) would never run in CI. With -DLN_EMULATE_AVX512=ON
 * avx512.c is compiled against this header instead of the compiler's: each intrinsic is
 * its documented lane-by-lane meaning (Intel Intrinsics Guide), FMA through fmaf, and a
 * masked-off lane is never read or written, like the hardware's fault suppression. It
 * proves the algorithm at 16 lanes, not the instruction selection.
 */
#include <math.h>

typedef struct {
    float f[16];
} __m512;
typedef unsigned short __mmask16;

#define _MM_SHUFFLE(a, b, c, d) (((a) << 6) | ((b) << 4) | ((c) << 2) | (d))
#define LN_EMU static inline __attribute__((always_inline))
#define LN_EMU_LANES for (int i = 0; i < 16; i++)

LN_EMU __m512 _mm512_loadu_ps(const void *p)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = ((const float *)p)[i];
    return r;
}
LN_EMU __m512 _mm512_maskz_loadu_ps(__mmask16 m, const void *p)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = (m >> i) & 1 ? ((const float *)p)[i] : 0.0f;
    return r;
}
LN_EMU void _mm512_storeu_ps(void *p, __m512 v) { LN_EMU_LANES((float *)p)[i] = v.f[i]; }
LN_EMU void _mm512_mask_storeu_ps(void *p, __mmask16 m, __m512 v)
{
    LN_EMU_LANES if ((m >> i) & 1)((float *)p)[i] = v.f[i];
}
LN_EMU __m512 _mm512_set1_ps(float f)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = f;
    return r;
}
LN_EMU __m512 _mm512_setzero_ps(void) { return _mm512_set1_ps(0.0f); }
LN_EMU float _mm512_cvtss_f32(__m512 v) { return v.f[0]; }

#define LN_EMU_BINARY(name, expr)                                                          \
    LN_EMU __m512 name(__m512 a, __m512 b)                                                 \
    {                                                                                      \
        __m512 r;                                                                          \
        LN_EMU_LANES r.f[i] = (expr);                                                      \
        return r;                                                                          \
    }
LN_EMU_BINARY(_mm512_add_ps, a.f[i] + b.f[i])
LN_EMU_BINARY(_mm512_sub_ps, a.f[i] - b.f[i])
LN_EMU_BINARY(_mm512_mul_ps, a.f[i] * b.f[i])

/* a - b where mask bit i is set, +0 elsewhere. */
LN_EMU __m512 _mm512_maskz_sub_ps(__mmask16 m, __m512 a, __m512 b)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = (m >> i) & 1 ? a.f[i] - b.f[i] : 0.0f;
    return r;
}

/* a*b + c and c - a*b, each rounded once. */
LN_EMU __m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = fmaf(a.f[i], b.f[i], c.f[i]);
    return r;
}
LN_EMU __m512 _mm512_fnmadd_ps(__m512 a, __m512 b, __m512 c)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = fmaf(-a.f[i], b.f[i], c.f[i]);
    return r;
}

/* 128-bit lanes: result lanes 0-1 from a, 2-3 from b, each chosen by two bits of imm. */
LN_EMU __m512 _mm512_shuffle_f32x4(__m512 a, __m512 b, int imm)
{
    __m512 r;
    for (int k = 0; k < 4; k++) {
        const __m512 *src = k < 2 ? &a : &b;
        const int sel = (imm >> (2 * k)) & 3;
        for (int j = 0; j < 4; j++)
            r.f[4 * k + j] = src->f[4 * sel + j];
    }
    return r;
}

/* Within each 128-bit lane, element j takes the element two bits of imm name. */
LN_EMU __m512 _mm512_permute_ps(__m512 a, int imm)
{
    __m512 r;
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            r.f[4 * k + j] = a.f[4 * k + ((imm >> (2 * j)) & 3)];
    return r;
}

#endif
