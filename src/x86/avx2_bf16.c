/* avx2_bf16.c - bf16 LayerNorm with AVX2 + FMA: the f32 bodies on widened lanes, RNE stores. */

/* Compiled as is: stores that quiet any NaN. avx2_bf16nf.c includes this file with
   LN_BF16_NANFREE 1: stores without the NaN blend, for calls with finite float operands
   (kernels/bf16_wrap.h says when that is exact). */
#ifndef LN_BF16_NANFREE
#define LN_BF16_NANFREE 0
#endif
#include <string.h>

#include "avx2_vocab.h"
#include "kernels/bf16_elem.h"

/* bf16 -> float is exact: each bf16 into the high half of its 32-bit lane, zeros below.
   The 8 values go into both 128-bit halves by a broadcast load (no ALU operation) and
   one in-lane byte shuffle places values 0-3 and 4-7; zero-extending and shifting
   (vpmovzxwd, vpslld) would take two. */
static inline V widen_at(const uint16_t *p)
{
    const __m256i h = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    const __m256i at = _mm256_setr_epi8(-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7,
                                        -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
    return _mm256_castsi256_ps(_mm256_shuffle_epi8(h, at));
}

/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16,
   bf16 in the low half of each 32-bit lane. The NaN-free twin keeps rne: its NaNs are
   quiet already and have a zero low half, which the rounding add leaves alone. */
static inline __m256i round_bits(V v)
{
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i rne = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    if (LN_BF16_NANFREE)
        return rne;
    const __m256i qnan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rne, qnan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

static inline __m128i narrow(V v)
{
    const __m256i r = round_bits(v);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* 16 results in one store: packus interleaves the 128-bit halves, the permute restores
   element order. */
static inline __m256i pack2(V a, V b)
{
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(round_bits(a), round_bits(b)), 0xD8);
}
#define LN_HAVE_E_STORE2 1
static inline void e_store2(uint16_t *p, V a, V b) { _mm256_storeu_si256((__m256i *)p, pack2(a, b)); }

/* Outputs past the cache (args.nt) stream: no read for ownership. Only in pairs, two
   to a line. */
#define LN_E_STREAM 1
#define LN_EALIGN 16
#define LN_HAVE_E_STREAM2 1
static inline void e_stream2(uint16_t *p, V a, V b) { _mm256_stream_si256((__m256i *)p, pack2(a, b)); }
/* The cold backward keeps ordinary dx stores with prefetches: streamed, paired against
   them (16 Mi elements), it ran 1.01x at 768-4096 columns, 0.97x at 1601, 0.85x at 64. */
#define LN_BWD_NO_STREAM 1

/* AVX2 has no 16-bit masked load or store: a tail (the mask's first lanes) goes through
   a stack copy, so nothing outside the row is read or written. */
static inline size_t lanes_of(VM m)
{
    return (size_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}

static inline V e_load(const uint16_t *p) { return widen_at(p); }
static inline V e_loadm(const uint16_t *p, VM m)
{
    uint16_t b[LN_W] = {0};
    memcpy(b, p, lanes_of(m) * sizeof *p);
    return e_load(b);
}
static inline void e_store(uint16_t *p, V v) { _mm_storeu_si128((__m128i *)p, narrow(v)); }
static inline void e_storem(uint16_t *p, VM m, V v)
{
    uint16_t b[LN_W];
    e_store(b, v);
    memcpy(p, b, lanes_of(m) * sizeof *p);
}

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"
#if !LN_BF16_NANFREE
#define LN_BF16_TWIN_FORWARD ln_bf16_forward_avx2nf
#define LN_BF16_TWIN_BACKWARD ln_bf16_backward_avx2nf
#endif
#include "kernels/bf16_wrap.h"

#include "kernels/entries.h"

#if LN_BF16_NANFREE
LN_BF16_ENTRIES(avx2nf)
#else
LN_BF16_ENTRIES(avx2)
#endif
