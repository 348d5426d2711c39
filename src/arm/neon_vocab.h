/* neon_vocab.h - the AArch64 Advanced SIMD vocabulary (4 float lanes) every src/kernels/
   body runs on. */
#ifndef LN_ARM_NEON_VOCAB_H
#define LN_ARM_NEON_VOCAB_H

#include <arm_neon.h>

typedef float32x4_t V;
/* NEON has no masked load or store: a tail is its lane count t (1..3), moved lane by lane,
   so nothing outside the row is read or written; m (the first t lanes set) zeroes lanes. */
typedef struct {
    uint32x4_t m;
    unsigned t;
} VM;
#define LN_W 4
#define LN_LOG2W 2
/* 4 accumulators of (mean, M2): one update is a sub -> fma -> sub -> fma chain (~12 cycles
   on Neoverse N1), four of them keep both FP pipes busy; 8 of the 32 registers, the rest
   for the apply riding along. */
#define LN_KBIG 4
#define LN_RFWD 4 /* 4 rows x 2 accumulators x (mean, M2) = 16 registers */
#define LN_RBWD 2

/* OP(l) for the tail's lanes l < t (1..3), one by one (lane numbers must be constants). */
#define LN_NEON_TAIL_LANES(t, OP)                                                          \
    do {                                                                                  \
        OP(0);                                                                            \
        if ((t) > 1)                                                                      \
            OP(1);                                                                        \
        if ((t) > 2)                                                                      \
            OP(2);                                                                        \
    } while (0)

static inline V v_loadm(const float *p, VM m)
{
    V v = vdupq_n_f32(0.0f);
#define LN_LANE(l) v = vld1q_lane_f32(p + (l), v, l)
    LN_NEON_TAIL_LANES(m.t, LN_LANE);
#undef LN_LANE
    return v;
}

static inline void v_storem(float *p, VM m, V v)
{
#define LN_LANE(l) vst1q_lane_f32(p + (l), v, l)
    LN_NEON_TAIL_LANES(m.t, LN_LANE);
#undef LN_LANE
}

static inline VM v_tailmask(unsigned t)
{
    static const uint32_t idx[LN_W] = {0, 1, 2, 3};
    const VM m = {vcltq_u32(vld1q_u32(idx), vdupq_n_u32(t)), t};
    return m;
}

static inline V v_load(const float *p) { return vld1q_f32(p); }
static inline void v_store(float *p, V v) { vst1q_f32(p, v); }
/* args.nt: plain stores. Arm cores switch to write-streaming (no allocate, no read for
   ownership) on their own when whole lines are written in sequence. */
#define LN_VALIGN 16
static inline void v_stream(float *p, V v) { vst1q_f32(p, v); }
static inline void v_nt_fence(void) {}
static inline V v_set1(float f) { return vdupq_n_f32(f); }
static inline V v_zero(void) { return vdupq_n_f32(0.0f); }
static inline V v_add(V a, V b) { return vaddq_f32(a, b); }
static inline V v_sub(V a, V b) { return vsubq_f32(a, b); }
static inline V v_subz(V a, V b, VM m)
{
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vsubq_f32(a, b)), m.m));
}
static inline V v_mul(V a, V b) { return vmulq_f32(a, b); }
static inline V v_fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
static inline V v_fnma(V a, V b, V c) { return vfmsq_f32(c, a, b); }
static inline float v_lane0(V v) { return vgetq_lane_f32(v, 0); }

/* Lanes l + 2, l + 1 moved down to lane l (levels 0, 1). */
static inline V v_fold(V v, unsigned level)
{
    return level == 0 ? vextq_f32(v, v, 2) : vrev64q_f32(v);
}

/* The four-row lane tree (kernels/ln_forward.h): two rows' halves side by side, then
   one lane per row, row r's in lane r. */
#define LN_TREE4_POS(r) (r)
static inline V v_cat_lo(V a, V b) { return vcombine_f32(vget_low_f32(a), vget_low_f32(b)); }
static inline V v_cat_hi(V a, V b) { return vcombine_f32(vget_high_f32(a), vget_high_f32(b)); }
static inline V v_quad_lo(V a, V b) { return vuzp1q_f32(a, b); }
static inline V v_quad_hi(V a, V b) { return vuzp2q_f32(a, b); }

/* GELU's extra vocabulary (kernels/gelu_body.h). FMAX/FMIN return NaN for a NaN in
   either operand, which passes it on as the body needs. */
static inline V v_fms(V a, V b, V c) { return vfmaq_f32(vnegq_f32(c), a, b); }
static inline V v_max(V a, V b) { return vmaxq_f32(a, b); }
static inline V v_min(V a, V b) { return vminq_f32(a, b); }
static inline V v_or(V a, V b)
{
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline V v_xor(V a, V b)
{
    return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline V v_andnot(V a, V b)
{
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(b), vreinterpretq_u32_f32(a)));
}
static inline V v_select_ge0(V h, V a, V b)
{
    return vbslq_f32(vcgeq_f32(h, vdupq_n_f32(0.0f)), a, b);
}
#define LN_GELU_NV 4 /* 32 registers hold four chains */
static inline V v_abs(V a) { return vabsq_f32(a); }
static inline V v_shl23(V k)
{
    return vreinterpretq_f32_u32(vshlq_n_u32(vreinterpretq_u32_f32(k), 23));
}
static inline V v_quot(V a, V b) { return vdivq_f32(a, b); }
static inline V v_rcp_approx(V b) { return vrecpeq_f32(b); } /* FRECPE: 8 bits */

#endif /* LN_ARM_NEON_VOCAB_H */
