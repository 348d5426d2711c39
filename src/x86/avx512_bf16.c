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

/* Masked (lanes past the row are neither read nor faulted on), then exact: zero-extend
   to 32 bits, shift into the high half. */
static inline V widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16. */
static inline __m256i narrow_shift(V v)
{
    const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    const __m512i rne = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    if (LN_BF16_NANFREE) /* its NaNs are quiet with a zero low half: rne keeps them */
        return _mm512_cvtepi32_epi16(rne);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(rne, nan, hi, _mm512_set1_epi32(0x40)));
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
        return _mm512_inserti64x4(_mm512_castsi256_si512(narrow_shift(a)), narrow_shift(b), 1);
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
static inline __m512i pack2(V a, V b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(narrow(a)), narrow(b), 1);
}
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
