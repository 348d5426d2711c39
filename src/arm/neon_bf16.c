/* neon_bf16.c - bf16 LayerNorm on AArch64 Advanced SIMD: the f32 bodies on widened lanes. */

/* Compiled as is: integer-shift rounding (any NEON CPU). neon_bf16cvt.c includes this
   file with LN_BF16_CVT 1: rounding by BFCVTN (FEAT_BF16). Each compilation instantiates
   the bodies once, so the rounding is a constant inside every loop. */
#ifndef LN_BF16_CVT
#define LN_BF16_CVT 0
#endif
#include "arm/neon_vocab.h"
#include "kernels/bf16_elem.h"

/* bf16 -> float is exact: each 16-bit lane widened into the high half of 32 bits. */
static inline V widen(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }
static inline V e_load(const uint16_t *p) { return widen(vld1_u16(p)); }
static inline V e_loadm(const uint16_t *p, VM m)
{
    uint16x4_t h = vdup_n_u16(0);
#define LN_LANE(l) h = vld1_lane_u16(p + (l), h, l)
    LN_NEON_TAIL_LANES(m.t, LN_LANE);
#undef LN_LANE
    return widen(h);
}

#if LN_BF16_CVT
/* BFCVTN (FEAT_BF16): the rounding of ln_f32_to_bf16 in one instruction (with Linux's
   FPCR: nearest even, subnormals kept, NaN quieted keeping its top bits). Inline asm, so
   the file needs no +bf16 flag that would let the compiler use BF16 elsewhere; only the
   table chosen by HWCAP2_BF16 reaches it. */
static inline uint16x4_t narrow(V v)
{
    uint16x4_t r;
    __asm__(".arch_extension bf16\n\tbfcvtn %0.4h, %1.4s" : "=w"(r) : "w"(v));
    return r;
}
#else
/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16. */
static inline uint16x4_t narrow(V v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v), hi = vshrq_n_u32(u, 16);
    const uint32x4_t lsb = vandq_u32(hi, vdupq_n_u32(1));
    const uint32x4_t rne = vshrq_n_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), lsb), 16);
    const uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
    return vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, vdupq_n_u32(0x40)), rne));
}
#endif

static inline void e_store(uint16_t *p, V v) { vst1_u16(p, narrow(v)); }
/* Two vectors' results in one 16-byte store (XTN + XTN2, or BFCVTN twice). */
#define LN_HAVE_E_STORE2 1
static inline void e_store2(uint16_t *p, V a, V b)
{
    vst1q_u16(p, vcombine_u16(narrow(a), narrow(b)));
}
static inline void e_storem(uint16_t *p, VM m, V v)
{
    const uint16x4_t h = narrow(v);
#define LN_LANE(l) vst1_lane_u16(p + (l), h, l)
    LN_NEON_TAIL_LANES(m.t, LN_LANE);
#undef LN_LANE
}

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

#include "kernels/bf16_wrap.h"

#include "kernels/entries.h"

/* One pair of entry points per rounding, each from its own file's compilation. */
#if LN_BF16_CVT
LN_BF16_ENTRIES(neonbf16)
#else
LN_BF16_ENTRIES(neon)
#endif
