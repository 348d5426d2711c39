/* avx2_vocab.h - the AVX2 + FMA vocabulary (8 float lanes) every src/kernels/ body runs on. */
#ifndef LN_X86_AVX2_VOCAB_H
#define LN_X86_AVX2_VOCAB_H

#include <immintrin.h>

typedef __m256 V;
typedef __m256i VM;
#define LN_W 8
#define LN_LOG2W 3
#define LN_KBIG 4 /* 8 of the 16 ymm registers, the rest for the apply riding along */
#define LN_RFWD 4 /* 4 rows x 2 accumulators x (mean, M2): all 16 registers, some spills, still faster */
#define LN_RBWD 2
/* The four-row groups apply two rows at a time, sharing gamma's and beta's loads
   (kernels/ln_forward.h: apply_rows_t); four at a time ran 0.90x at 256 columns. */
#define LN_GROUP_APPLY 2

/* maskload/maskstore never touch a masked-off lane, so tails stay inside the row. */
static const int ln_mask_table[2 * LN_W] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

static inline V v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline V v_loadm(const float *p, VM m) { return _mm256_maskload_ps(p, m); }
static inline void v_store(float *p, V v) { _mm256_storeu_ps(p, v); }
/* A masked store goes out lane by lane through a stack copy: as vmaskmovps, the tail
   store of each row cost a cold backward at 1604 columns (rows 1608 apart, dx streamed)
   1.13x the time (Zen 3, 64 MiB flushed, paired builds); the warm backward at 100-4100
   columns and the forward at 1601, warm and cold, measured 0.99-1.01x either way. */
static inline void v_storem(float *p, VM m, V v)
{
    float t[8];
    _mm256_storeu_ps(t, v);
    const unsigned k = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
    for (unsigned i = 0; i < 8; i++)
        if (k >> i & 1)
            p[i] = t[i];
}
/* Non-temporal store (args.nt): p must be LN_VALIGN-aligned; v_nt_fence orders the
   streamed lines before the call returns (another thread may read them next). */
#define LN_VALIGN 32
/* Without a two-source permute to join a misaligned row's vectors (kernels/ln_common.h:
   LN_JOIN), float rows that would stream from a head do not: peeled, every other load of
   gamma and of the backward's partials split a line, and a cold backward with dx 16
   bytes off ran at 0.4-0.7x; stored normally, prefetched, 2.64x, 1.54x, 1.04x faster at
   256, 768, 4096 columns, 1.45x and 1.16x on contiguous rows of 777 and 1601 (Zen 4,
   64 MiB, alternating builds). A streamed forward keeps its peel (not streaming measured
   0.73-1.36x), with the head stored lane by lane: as vmaskmovps it ran 256 columns
   1.64x and 768 1.18x slower (y 16 bytes off). */
#define LN_STREAM_NO_HEAD 1
#define LN_HEAD_BY_LANES 1
/* A streamed forward row writes whole 64-byte lines non-temporally, two vectors each, and
   the vectors of the lines it shares with its neighbours normally (kernels/ln_forward.h):
   half a line streamed and half stored at each row's ends (contiguous rows of 1601
   columns) ran 1.32-1.46x the per-element time of 1600's, cold; by lines the forward ran
   1.21-1.22x faster there, 1.06-1.11x at 64 columns, 0.99-1.18x at 768 and 1600, 1.00x
   at 4096 (Zen 3, 64 MiB flushed, alternating builds, two runs). The backward's dx in line pairs ran 0.88-0.97x at
   64-4096 columns and 1.02x at 1601: it streams vector by vector. */
#define LN_FWD_STREAM_LINES 1
/* A cold backward's dx streams whole lines only, vector by vector, where its rows have a
   tail or do not follow each other (kernels/ln_backward.h: bwd_stream_lines): a line with
   a row's tail stored normally and the next row's first vector streamed ran 100 columns,
   rows 104 apart, at 0.22 G elements/s, 5.4-6.4x slower than by lines, and 1604 columns,
   rows 1608 apart, 1.21-1.26x slower with the tail stored as v_storem does (Zen 3, 64 MiB
   flushed, paired builds). Contiguous rows without a tail, whose shared lines hold two
   streamed vectors, keep streaming every vector: 72 columns in whole lines only ran 0.80x. */
#define LN_BWD_STREAM_LINES 1
static inline void v_stream(float *p, V v) { _mm256_stream_ps(p, v); }
static inline void v_nt_fence(void) { _mm_sfence(); }
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

/* The four-row lane tree (kernels/ln_forward.h): two rows' halves side by side, then
   pairs of lanes of rows 0 and 2 in the low 128 bits, of rows 1 and 3 in the high. */
#define LN_TREE4_POS(r) ((r) == 1 ? 4 : (r) == 2 ? 2 : 2 * (r))
#define LN_F4_TO_D4(f) ((ln_d4)_mm256_cvtps_pd((__m128)(f)))
#define LN_D4_TO_F4(d) ((ln_f4)_mm256_cvtpd_ps((__m256d)(d)))
#define LN_D4_SQRT(v) ((ln_d4)_mm256_sqrt_pd((__m256d)(v)))
static inline V v_cat_lo(V a, V b) { return _mm256_permute2f128_ps(a, b, 0x20); }
static inline V v_cat_hi(V a, V b) { return _mm256_permute2f128_ps(a, b, 0x31); }
static inline V v_quad_lo(V a, V b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)); }
static inline V v_quad_hi(V a, V b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)); }

/* GELU's extra vocabulary (kernels/gelu_body.h). rcpps has only 12 bits, so AVX2
   divides (its divider is pipelined; the vectors of an iteration overlap it). */
/* Vectors per GELU iteration: ~8 live ymm per erf chain, so two fill the 16 registers
   (three or four: erf forward 1.03x the time); the tanh form's chains are narrower, and
   three ran 0.88x (forward) and 0.95x (backward) the time of two (Zen 5, hot). */
#define LN_GELU_NV 2
#define LN_GELU_NV_TANH 3
static inline V v_abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline V v_shl23(V k)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(k), 23));
}
static inline V v_quot(V a, V b) { return _mm256_div_ps(a, b); }
static inline V v_rcp_approx(V b) { return _mm256_rcp_ps(b); }
static inline V v_fms(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
static inline V v_max(V a, V b) { return _mm256_max_ps(a, b); }
static inline V v_min(V a, V b) { return _mm256_min_ps(a, b); }
static inline V v_or(V a, V b) { return _mm256_or_ps(a, b); }
static inline V v_xor(V a, V b) { return _mm256_xor_ps(a, b); }
static inline V v_andnot(V a, V b) { return _mm256_andnot_ps(a, b); }
static inline V v_select_ge0(V h, V a, V b)
{
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(h, _mm256_setzero_ps(), _CMP_GE_OQ));
}

#endif /* LN_X86_AVX2_VOCAB_H */
