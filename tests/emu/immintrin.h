/* immintrin.h - scalar stand-ins for the AVX-512 intrinsics the src/x86 AVX-512 kernels use (test builds only). */
#ifndef LN_EMU_IMMINTRIN_H
#define LN_EMU_IMMINTRIN_H

/*
 * CPUs of this project's machine kind lack AVX-512, so the kernel's 16-lane logic (opmask
 * tails, lane folds, the merge plan) would never run in CI. With -DLN_EMULATE_AVX512=ON
 * the AVX-512 kernel files (f32, bf16 in both roundings, GELU) are compiled against this
 * header instead of the compiler's: each intrinsic is its documented lane-by-lane
 * meaning (Intel Intrinsics Guide), FMA through fmaf, and a masked-off lane is never read
 * or written, like the hardware's fault suppression. It proves the algorithm at 16
 * lanes, not the instruction selection.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LN_EMU_AVX512 1 /* lets a kernel file swap inline asm for an intrinsic below */

typedef struct {
    float f[16];
} __m512;
typedef union {
    uint32_t w[16];
    uint16_t h[32];
} __m512i;
typedef union {
    uint32_t w[8];
    uint16_t h[16];
} __m256i;
typedef __m256i __m256bh; /* 16 bf16 */
typedef unsigned short __mmask16;
typedef unsigned int __mmask32;

#define _CMP_UNORD_Q 0x03
#define _CMP_GE_OQ 0x1d

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
/* The hardware faults on a misaligned non-temporal store: so does the emulation. */
LN_EMU void _mm512_stream_ps(void *p, __m512 v)
{
    if ((uintptr_t)p % 64)
        __builtin_trap();
    _mm512_storeu_ps(p, v);
}
LN_EMU void _mm_sfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
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

/* Lane i takes lane idx[i] & 31 of the 32-lane pair a:b (a's lanes first). */
LN_EMU __m512 _mm512_permutex2var_ps(__m512 a, __m512i idx, __m512 b)
{
    __m512 r;
    LN_EMU_LANES
    {
        const unsigned j = idx.w[i] & 31;
        r.f[i] = j < 16 ? a.f[j] : b.f[j - 16];
    }
    return r;
}
LN_EMU __m512i _mm512_setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7,
                                 int e8, int e9, int e10, int e11, int e12, int e13, int e14,
                                 int e15)
{
    const int e[16] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
    __m512i r;
    LN_EMU_LANES r.w[i] = (uint32_t)e[i];
    return r;
}

/* ---- GELU: min/max with x86's NaN rule, bit operations, division ---- */

/* The second operand is returned when either is NaN (or both are zeros of either sign). */
LN_EMU_BINARY(_mm512_max_ps, a.f[i] > b.f[i] ? a.f[i] : b.f[i])
LN_EMU_BINARY(_mm512_min_ps, a.f[i] < b.f[i] ? a.f[i] : b.f[i])
LN_EMU_BINARY(_mm512_div_ps, a.f[i] / b.f[i])
/* vrangeps for the absolute minimum (imm 2 / 6) and maximum (3 / 7): a tie in magnitude
   gives the maximum the positive operand and the minimum the negative one (as measured
   on an Intel Xeon, zeros included); a NaN operand gives a quiet NaN; imm bits 3:2
   select the sign (0: a's, 1: the chosen operand's, 2: clear, 3: set). Other imms trap:
   the emulation must not give a kernel an answer the hardware would not. */
LN_EMU __m512 _mm512_range_ps(__m512 a, __m512 b, int imm)
{
    if ((imm & 2) == 0 || imm > 15)
        __builtin_trap();
    __m512 r;
    LN_EMU_LANES
    {
        const float x = a.f[i], y = b.f[i];
        if (isnan(x) || isnan(y)) {
            r.f[i] = x + y;
            continue;
        }
        const float ax = fabsf(x), ay = fabsf(y);
        const int neg_x = signbit(x) != 0;
        float v;
        if (ax != ay)
            v = (imm & 1) == (ax > ay) ? x : y;
        else
            v = (imm & 1) == !neg_x ? x : y;
        switch (imm >> 2 & 3) {
        case 0: v = copysignf(v, x); break;
        case 2: v = fabsf(v); break;
        case 3: v = -fabsf(v); break;
        default: break;
        }
        r.f[i] = v;
    }
    return r;
}

/* rcp14: the hardware's table value is not specified, only |error| < 2^-14 relative;
   1/x with its low 9 mantissa bits cleared (a truncation error below 2^-14) stays
   inside that, so erfcx's remainder correction (kernels/gelu_math.h), which multiplies
   by it, is exercised with an error of that size.
   0, Inf and NaN keep their exact results (Inf, 0, NaN). */
LN_EMU __m512 _mm512_rcp14_ps(__m512 a)
{
    __m512 r;
    LN_EMU_LANES
    {
        float q = 1.0f / a.f[i];
        uint32_t u;
        memcpy(&u, &q, 4);
        if (isfinite(q) && q != 0.0f)
            u &= ~0x1FFu;
        memcpy(&r.f[i], &u, 4);
    }
    return r;
}

LN_EMU __m512 _mm512_fmsub_ps(__m512 a, __m512 b, __m512 c)
{
    __m512 r;
    LN_EMU_LANES r.f[i] = fmaf(a.f[i], b.f[i], -c.f[i]);
    return r;
}

LN_EMU __m512i _mm512_castps_si512(__m512 v)
{
    __m512i r;
    memcpy(r.w, v.f, sizeof r.w);
    return r;
}
LN_EMU __m512 _mm512_castsi512_ps(__m512i v)
{
    __m512 r;
    memcpy(r.f, v.w, sizeof r.f);
    return r;
}

#define LN_EMU_BITS(name, expr)                                                            \
    LN_EMU __m512 name(__m512 fa, __m512 fb)                                               \
    {                                                                                      \
        const __m512i a = _mm512_castps_si512(fa), b = _mm512_castps_si512(fb);            \
        __m512i r;                                                                         \
        LN_EMU_LANES r.w[i] = (expr);                                                      \
        return _mm512_castsi512_ps(r);                                                     \
    }
LN_EMU_BITS(_mm512_or_ps, a.w[i] | b.w[i])
LN_EMU_BITS(_mm512_xor_ps, a.w[i] ^ b.w[i])
LN_EMU_BITS(_mm512_andnot_ps, ~a.w[i] & b.w[i]) /* (not a) and b */

/* Ordered >= (false for NaN) and unordered (true for NaN): the predicates the kernels use. */
LN_EMU __mmask16 _mm512_cmp_ps_mask(__m512 a, __m512 b, int imm)
{
    __mmask16 m = 0;
    LN_EMU_LANES
    {
        const int unord = isnan(a.f[i]) || isnan(b.f[i]);
        const int t = imm == _CMP_UNORD_Q ? unord : imm == _CMP_GE_OQ ? !unord && a.f[i] >= b.f[i] : -1;
        if (t < 0)
            __builtin_trap(); /* a predicate this stand-in does not know */
        m |= (__mmask16)(t << i);
    }
    return m;
}

LN_EMU __m512 _mm512_mask_mov_ps(__m512 src, __mmask16 k, __m512 a)
{
    LN_EMU_LANES if ((k >> i) & 1) src.f[i] = a.f[i];
    return src;
}

/* ---- bf16: 16-bit loads and stores (masked-off lanes untouched), integer lanes ---- */

LN_EMU __m256i _mm256_loadu_si256(const void *p)
{
    __m256i r;
    memcpy(r.h, p, sizeof r.h);
    return r;
}
LN_EMU void _mm256_storeu_si256(void *p, __m256i v) { memcpy(p, v.h, sizeof v.h); }
LN_EMU void _mm512_storeu_si512(void *p, __m512i v) { memcpy(p, v.h, sizeof v.h); }
/* Streams trap when misaligned, as the hardware faults. */
LN_EMU void _mm256_stream_si256(void *p, __m256i v)
{
    if ((uintptr_t)p % 32)
        __builtin_trap();
    _mm256_storeu_si256(p, v);
}
LN_EMU void _mm512_stream_si512(void *p, __m512i v)
{
    if ((uintptr_t)p % 64)
        __builtin_trap();
    _mm512_storeu_si512(p, v);
}
LN_EMU __m512i _mm512_castsi256_si512(__m256i v)
{
    __m512i r = {{0}}; /* the upper half is undefined on hardware; zero here */
    memcpy(r.h, v.h, sizeof v.h);
    return r;
}
LN_EMU __m256i _mm512_castsi512_si256(__m512i v)
{
    __m256i r;
    memcpy(r.h, v.h, sizeof r.h);
    return r;
}
/* Word j of the result: word idx[j] mod 32 of a, or 0 where m's bit j is clear. */
LN_EMU __m512i _mm512_maskz_permutexvar_epi16(__mmask32 m, __m512i idx, __m512i a)
{
    __m512i r;
    for (int j = 0; j < 32; j++)
        r.h[j] = (m >> j) & 1 ? a.h[idx.h[j] & 31] : 0;
    return r;
}
/* Word j of the result: word idx[j] mod 64 of the pair a:b (b's words are 32-63). */
LN_EMU __m512i _mm512_permutex2var_epi16(__m512i a, __m512i idx, __m512i b)
{
    __m512i r;
    for (int j = 0; j < 32; j++) {
        const unsigned k = idx.h[j] & 63;
        r.h[j] = k < 32 ? a.h[k] : b.h[k - 32];
    }
    return r;
}
LN_EMU __m256i _mm256_maskz_loadu_epi16(__mmask16 m, const void *p)
{
    __m256i r;
    LN_EMU_LANES r.h[i] = (m >> i) & 1 ? ((const uint16_t *)p)[i] : 0;
    return r;
}
LN_EMU void _mm256_mask_storeu_epi16(void *p, __mmask16 m, __m256i v)
{
    LN_EMU_LANES if ((m >> i) & 1)((uint16_t *)p)[i] = v.h[i];
}

LN_EMU __m512i _mm512_set1_epi32(int x)
{
    __m512i r;
    LN_EMU_LANES r.w[i] = (uint32_t)x;
    return r;
}
LN_EMU __m512i _mm512_slli_epi32(__m512i v, unsigned n)
{
    LN_EMU_LANES v.w[i] = n > 31 ? 0 : v.w[i] << n;
    return v;
}
LN_EMU __m512i _mm512_srli_epi32(__m512i v, unsigned n)
{
    LN_EMU_LANES v.w[i] = n > 31 ? 0 : v.w[i] >> n;
    return v;
}
LN_EMU __m512i _mm512_add_epi32(__m512i a, __m512i b)
{
    LN_EMU_LANES a.w[i] += b.w[i];
    return a;
}
LN_EMU __m512i _mm512_setzero_si512(void) { return _mm512_set1_epi32(0); }
/* Signed. */
LN_EMU __m512i _mm512_max_epi32(__m512i a, __m512i b)
{
    LN_EMU_LANES a.w[i] = (int32_t)a.w[i] > (int32_t)b.w[i] ? a.w[i] : b.w[i];
    return a;
}
LN_EMU __m512i _mm512_and_si512(__m512i a, __m512i b)
{
    LN_EMU_LANES a.w[i] &= b.w[i];
    return a;
}
/* a | b where k is set, src elsewhere. */
LN_EMU __m512i _mm512_mask_or_epi32(__m512i src, __mmask16 k, __m512i a, __m512i b)
{
    LN_EMU_LANES if ((k >> i) & 1) src.w[i] = a.w[i] | b.w[i];
    return src;
}

/* fpclass: only bit 0x20 (denormal), the class the kernels ask for. */
LN_EMU __mmask16 _mm512_fpclass_ps_mask(__m512 v, int imm)
{
    if (imm != 0x20)
        __builtin_trap();
    __mmask16 m = 0;
    LN_EMU_LANES m |= (__mmask16)((fpclassify(v.f[i]) == FP_SUBNORMAL) << i);
    return m;
}

/* vcvtneps2bf16 / vcvtne2ps2bf16 (AVX512_BF16) as the Intrinsics Guide defines them:
   denormal inputs count as zero of their sign, NaN is made quiet keeping its sign and
   high payload, everything else rounds to nearest even. */
LN_EMU uint16_t ln_emu_cvtne_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7F800000u) == 0)
        return (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
LN_EMU __m256bh _mm512_cvtneps_pbh(__m512 v)
{
    __m256bh r;
    LN_EMU_LANES r.h[i] = ln_emu_cvtne_bf16(v.f[i]);
    return r;
}
/* 32 results: a's 16 above b's (the instruction's operand order). */
LN_EMU __m512i _mm512_cvtne2ps_pbh(__m512 a, __m512 b)
{
    __m512i r;
    LN_EMU_LANES
    {
        r.h[i] = ln_emu_cvtne_bf16(b.f[i]);
        r.h[16 + i] = ln_emu_cvtne_bf16(a.f[i]);
    }
    return r;
}

#endif
