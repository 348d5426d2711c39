/* avx512_vocab.h - the AVX-512 F/BW/VL/DQ vocabulary (16 float lanes) of the src/kernels/ bodies. */
#ifndef LN_X86_AVX512_VOCAB_H
#define LN_X86_AVX512_VOCAB_H

#include <immintrin.h>

typedef __m512 V;
typedef __mmask16 VM;
#define LN_W 16
#define LN_LOG2W 4
#define LN_KBIG 8 /* 16 of the 32 zmm registers */
#define LN_RFWD 4 /* 4 rows x 2 accumulators x (mean, M2) = 16 registers */
#define LN_RBWD 4
/* Rows up to 2048 columns: 4-row groups (K = 2) ran 8-20 % faster than pipelined single
   rows (K = 8) at 768-2048 columns on Zen 4, and one row's call no slower (its reduction
   tree is shallower); AVX2, with half the lanes, gains less and loses on single rows. */
#define LN_FWD_SMALL_COLS (128 * LN_W)
/* Cold float calls (args.nt) group rows only up to 192 columns; longer rows up to the
   bound above run one at a time with the groups' K, so with the same bits. Zen 4, 64 MiB
   operands flushed before each call, paired calls, time grouped / single (a range: two or three
   runs): 0.92x at 160 columns, 1.02x at 192, 1.12-1.13x at 256, 1.37x at 320, 1.66-1.68x
   at 512, 1.67-1.74x at 768, 1.48-1.77x at 1024, 1.19-1.22x at 1601, 1.14-1.18x at 2048;
   RMSNorm 1.25x at 256, 1.80x at 512.
   bf16 rows lost (0.80x at 256, 0.86x at 768) and keep their groups. */
#define LN_FWD_COLD_GROUP_COLS (12 * LN_W)
/* The streamed backward (kernels/ln_backward.h) keeps its four-row groups up to 64
   columns, not 128: on Zen 4 (2026-12-06; 8, 32 and 64 MiB per operand flushed before each
   call, paired calls, time groups / single rows) 1.46-1.61x at 128 columns in five runs,
   1.13-1.16x at 96 and 112, 0.98x at 80, 0.83-1.03x at 64. AVX2's groups did not lose
   at 128 (0.92x, 0.99x), so only this vocabulary moves the bound. */
#define LN_BWD_STREAM_R4_COLS (4 * LN_W)
/* Four-row groups apply column by column, sharing gamma's and beta's loads (kernels/
   ln_forward.h: apply_rows_t), two vectors a step: the rows' constants and four vectors
   of gamma and beta take 16 of the 32 registers (one vector a step ran 0.80-0.97x). The
   value: rows applied at once. */
#define LN_GROUP_APPLY 4

/* Opmask loads and stores suppress faults on masked-off lanes: tails stay in the row. */
static inline V v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline V v_loadm(const float *p, VM m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline void v_storem(float *p, VM m, V v) { _mm512_mask_storeu_ps(p, m, v); }
/* One vector at a runtime offset 0 < s < LN_W into the pair of vectors lo:hi: lane l of
   v_join(lo, hi, v_join_idx(s)) is lane s + l of the pair (kernels/ln_forward.h reads
   gamma and beta of peeled rows this way, from aligned loads). */
#define LN_JOIN 1
typedef __m512i VJ;
static inline VJ v_join_idx(unsigned s)
{
    return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32((int)s));
}
static inline V v_join(V lo, V hi, VJ idx) { return _mm512_permutex2var_ps(lo, idx, hi); }
/* Non-temporal store (args.nt): p must be LN_VALIGN-aligned; v_nt_fence orders the
   streamed lines before the call returns (another thread may read them next). */
#define LN_VALIGN 64
static inline void v_stream(float *p, V v) { _mm512_stream_ps(p, v); }
static inline void v_nt_fence(void) { _mm_sfence(); }
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
/* Lanes t .. LN_W - 1 (0 < t < LN_W): the complement of v_tailmask(t). */
static inline VM v_headmask(unsigned t) { return (VM)~v_tailmask(t); }

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

/* The four-row lane tree (kernels/ln_forward.h): two rows' halves side by side, then
   four rows' quarters, one per 128-bit block; row r's result ends in lane 4r. */
#define LN_TREE4_POS(r) (4 * (r))
static inline V v_cat_lo(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)); }
static inline V v_cat_hi(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)); }
static inline V v_quad_lo(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
static inline V v_quad_hi(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
#ifndef LN_EMU_AVX512 /* the scalar stand-ins take the generic forms (ln_common.h) */
/* The four rows' results (lanes LN_TREE4_POS(0..3)) as four floats. */
#define LN_TREE4_F4(s)                                                                      \
    ((ln_f4)_mm512_castps512_ps128(_mm512_permutexvar_ps(                                   \
        _mm512_setr_epi32(LN_TREE4_POS(0), LN_TREE4_POS(1), LN_TREE4_POS(2), LN_TREE4_POS(3), \
                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),                              \
        (s))))
#define LN_F4_TO_D4(f) ((ln_d4)_mm256_cvtps_pd((__m128)(f)))
#define LN_D4_TO_F4(d) ((ln_f4)_mm256_cvtpd_ps((__m256d)(d)))
#define LN_I4_BAD(m) ((unsigned)_mm_movemask_ps((__m128)(m)) ^ 15u)
#define LN_D4_SQRT(v) ((ln_d4)_mm256_sqrt_pd((__m256d)(v)))
#endif

/* The operand of larger magnitude, bits unchanged (vrangeps: absolute maximum, the sign
   of the one chosen); the statistics' re-centering (kernels/ln_forward.h) uses it. */
#define LN_HAVE_MAXMAG 1
static inline V v_maxmag(V a, V b) { return _mm512_range_ps(a, b, 0x7); }

/* GELU's extra vocabulary (kernels/gelu_body.h). */
/* Vectors per GELU iteration (AVX-512, Zen 5, hot, time against four): erf 2 1.02-1.10x,
   3 1.02-1.06x, 6 1.00-1.02x, 8 1.05-1.20x (spills); tanh, whose chains hold fewer
   registers, 6 0.89-0.94x, 8 0.82-0.88x. */
#define LN_GELU_NV 4
#define LN_GELU_NV_TANH 8
static inline V v_abs(V a) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), a); }
static inline V v_shl23(V k)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(k), 23));
}
/* Integer operations on the lanes' bits, for GELU's exact powers of two (the tanh
   backward; kernels/gelu_body.h): they leave the multiply-add pipes to the polynomials.
   v_imax0: max(a, +0) with the bits compared as signed integers, so every lane with its
   sign bit set becomes +0. */
#define LN_GELU_EXP_IADD 1
static inline V v_iadd(V a, V b)
{
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
static inline V v_imax0(V a)
{
    return _mm512_castsi512_ps(_mm512_max_epi32(_mm512_castps_si512(a), _mm512_setzero_si512()));
}
/* The divider, not rcp14 and a Newton step (three operations on the multiply-add pipes,
   which bound the GELU loops): one divide per vector leaves it idle most of the time.
   Zen 4, hot, tanh forward, time rcp14 / divide: 1.06x; with the forward's quotient form
   (kernels/gelu_body.h) 1.10-1.12x; the backward 0.99-1.01x. */
static inline V v_quot(V a, V b) { return _mm512_div_ps(a, b); }
static inline V v_rcp_approx(V b) { return _mm512_rcp14_ps(b); }
/* rcp14's 14 bits are enough for erfcx's quotient, whose exact remainder it adds anyway:
   a product with the estimate replaces v_quot there (kernels/gelu_math.h), one divide
   fewer per vector of the erf form. */
#define LN_RCP_APPROX_14 1
static inline V v_fms(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
static inline V v_max(V a, V b) { return _mm512_max_ps(a, b); }
static inline V v_min(V a, V b) { return _mm512_min_ps(a, b); }
static inline V v_or(V a, V b) { return _mm512_or_ps(a, b); }
static inline V v_xor(V a, V b) { return _mm512_xor_ps(a, b); }
static inline V v_andnot(V a, V b) { return _mm512_andnot_ps(a, b); }
static inline V v_select_ge0(V h, V a, V b)
{
    return _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(h, _mm512_setzero_ps(), _CMP_GE_OQ), a);
}

#endif /* LN_X86_AVX512_VOCAB_H */
