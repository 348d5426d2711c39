/* avx512_bf16.c - bf16 LayerNorm with AVX-512: the f32 bodies on widened lanes, RNE stores. */

/* Compiled as is: integer-shift rounding (any AVX-512 CPU). avx512bf16.c includes this
   file with LN_BF16_CVT 1: rounding by vcvtneps2bf16 (AVX512_BF16); avx512_bf16nf.c with
   LN_BF16_NANFREE 1: shift rounding without the NaN quieting, for calls with finite float
   operands (kernels/bf16_wrap.h says when that is exact). */
#ifndef LN_BF16_CVT
#define LN_BF16_CVT 0
#endif
#ifndef LN_BF16_NANFREE
#define LN_BF16_NANFREE 0
#endif
#include "avx512_vocab.h"
#include "kernels/bf16_elem.h"

/* Two words of a 16-bit permute's index vector as one 32-bit element: the source words
   that land in the element's low and high word. */
#define LN_W2(lo, hi) ((int)((unsigned)(lo) | (unsigned)(hi) << 16))

/* bf16 -> float is exact: each bf16 into the high half of its 32-bit lane, zeros below.
   One word permute with a zeroing mask places the 16 values (the even words, masked off,
   are the zeros); zero-extending and shifting (vpmovzxwd, vpslld) took two operations,
   and one fewer ran the hot forward 1.09-1.12x and backward 1.04-1.11x faster at 768 and
   4096 columns (Zen 5, AVX512_BF16 kernel; cold 1.02-1.03x). A masked load has zeroed
   the lanes past the row already. */
static inline V widen(__m256i h)
{
    const __m512i at = _mm512_setr_epi32(
        LN_W2(0, 0), LN_W2(0, 1), LN_W2(0, 2), LN_W2(0, 3), LN_W2(0, 4), LN_W2(0, 5),
        LN_W2(0, 6), LN_W2(0, 7), LN_W2(0, 8), LN_W2(0, 9), LN_W2(0, 10), LN_W2(0, 11),
        LN_W2(0, 12), LN_W2(0, 13), LN_W2(0, 14), LN_W2(0, 15));
    return _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, at, _mm512_castsi256_si512(h)));
}

/* The high words of a's 16 lanes then of b's (a permute of two sources reads words 32-63
   from its second): rounded results out of their lanes in one operation, where a shift
   and a truncating vpmovdw (two) per vector did it before. With the permute above, the
   shift-rounding kernels (no AVX512_BF16) ran 1.07-1.09x faster hot, forward and
   backward (forced on Zen 5). */
static inline __m512i high_words(__m512i a, __m512i b)
{
    const __m512i at = _mm512_setr_epi32(
        LN_W2(1, 3), LN_W2(5, 7), LN_W2(9, 11), LN_W2(13, 15), LN_W2(17, 19), LN_W2(21, 23),
        LN_W2(25, 27), LN_W2(29, 31), LN_W2(33, 35), LN_W2(37, 39), LN_W2(41, 43),
        LN_W2(45, 47), LN_W2(49, 51), LN_W2(53, 55), LN_W2(57, 59), LN_W2(61, 63));
    return _mm512_permutex2var_epi16(a, at, b);
}

/* Round to nearest even on the bits, NaN made quiet (the lane form of ln_f32_to_bf16),
   the bf16 left in the high word of each lane. */
static inline __m512i round_high(V v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rne = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
    if (LN_BF16_NANFREE) /* its NaNs are quiet with a zero low half: rne keeps them */
        return rne;
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(rne, nan, u, _mm512_set1_epi32(0x400000));
}

static inline __m256i narrow_shift(V v)
{
    const __m512i r = round_high(v);
    return _mm512_castsi512_si256(high_words(r, r));
}

#if LN_BF16_CVT
/* vcvtneps2bf16 rounds to nearest even and quiets NaN as above, but treats float
   subnormals as zero; such lanes are rare (|v| < 2^-126), so a vector holding one takes
   the shift path and both variants give identical bits. Inline asm, so the file needs no
   BF16 flag that would let the compiler emit BF16 instructions elsewhere; only the table
   chosen by the CPU check reaches it. The emulation has the intrinsic instead. */
static inline __m256i narrow(V v)
{
    if (_mm512_fpclass_ps_mask(v, 0x20))
        return narrow_shift(v);
#ifdef LN_EMU_AVX512
    return _mm512_cvtneps_pbh(v);
#else
    __m256i r;
    __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
    return r;
#endif
}

/* 32 results from one vcvtne2ps2bf16; a pair holding a subnormal takes the shift path
   as above. */
static inline __m512i pack2(V a, V b)
{
    if (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20))
        return high_words(round_high(a), round_high(b));
#ifdef LN_EMU_AVX512
    return _mm512_cvtne2ps_pbh(b, a);
#else
    __m512i r; /* a into the low half: the instruction's second source */
    __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(b), "v"(a));
    return r;
#endif
}
#define LN_HAVE_E_STORE2 1
static inline void e_store2(uint16_t *p, V a, V b) { _mm512_storeu_si512(p, pack2(a, b)); }
#else
static inline __m256i narrow(V v) { return narrow_shift(v); }
/* Without the two-source convert, a line packs from two halves; only streams use it (the
   ordinary stores ran as fast as two halves). */
static inline __m512i pack2(V a, V b) { return high_words(round_high(a), round_high(b)); }
#endif

static inline V e_load(const uint16_t *p) { return widen(_mm256_loadu_si256((const __m256i *)p)); }
static inline V e_loadm(const uint16_t *p, VM m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
static inline void e_store(uint16_t *p, V v) { _mm256_storeu_si256((__m256i *)p, narrow(v)); }
static inline void e_storem(uint16_t *p, VM m, V v) { _mm256_mask_storeu_epi16(p, m, narrow(v)); }
/* Outputs past the cache (args.nt) stream: no read for ownership, so a cold forward
   moves 4 bytes per element instead of 6. They go out in pairs, each a whole line. The
   one-vector e_stream is never reached (bwd_apply_vec's stream branch: the pairs take
   every streamed vector), yet compiled out it made GCC 12 lay out the streamed cold
   backward differently and run it 0.69x at 768 columns (16 Mi elements, Intel). */
#define LN_E_STREAM 1
#define LN_EALIGN 32
static inline void e_stream(uint16_t *p, V v) { _mm256_stream_si256((__m256i *)p, narrow(v)); }
#define LN_HAVE_E_STREAM2 1
static inline void e_stream2(uint16_t *p, V a, V b) { _mm512_stream_si512((void *)p, pack2(a, b)); }

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"
#if !LN_BF16_CVT && !LN_BF16_NANFREE
#define LN_BF16_TWIN_FORWARD ln_bf16_forward_avx512nf
#define LN_BF16_TWIN_BACKWARD ln_bf16_backward_avx512nf
#endif
#include "kernels/bf16_wrap.h"

#include "kernels/entries.h"

/* One pair of entry points per rounding, each from its own file's compilation. */
#if LN_BF16_CVT
LN_BF16_ENTRIES(avx512bf16)
#elif LN_BF16_NANFREE
LN_BF16_ENTRIES(avx512nf)
#else
LN_BF16_ENTRIES(avx512)
#endif
