/* gelu_neon.c - GELU forward/backward with AArch64 Advanced SIMD on SLEEF's vector exp and erfc. */
#include <arm_neon.h>
#include <sleef.h>
#include <string.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 4

static inline float32x4_t vset(double c) { return vdupq_n_f32((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): vmaxq/vminq return NaN for a NaN. */
static inline float32x4_t clamp_lo(float32x4_t x)
{
    return vmaxq_f32(vdupq_n_f32(-LN_GELU_CLAMP), x);
}
static inline float32x4_t clamp(float32x4_t x)
{
    return vminq_f32(vdupq_n_f32(LN_GELU_CLAMP), clamp_lo(x));
}

/* a b - c, the rounding error of a product when c is its rounded value */
static inline float32x4_t fms(float32x4_t a, float32x4_t b, float32x4_t c)
{
    return vfmaq_f32(vnegq_f32(c), a, b);
}

/* w = 2u = 2C x + 2CK x^3 as hi + *lo (gelu.h): exact products by fma, one two-sum. */
static inline float32x4_t arg_w(float32x4_t x, float32x4_t *lo)
{
    const float32x4_t c1h = vset(LN_GELU_HI(LN_GELU_2C)), c1l = vset(LN_GELU_LO(LN_GELU_2C));
    const float32x4_t c3h = vset(LN_GELU_HI(LN_GELU_2CK)), c3l = vset(LN_GELU_LO(LN_GELU_2CK));
    const float32x4_t x2h = vmulq_f32(x, x), x2l = fms(x, x, x2h);
    const float32x4_t x3h = vmulq_f32(x2h, x), x3l = vfmaq_f32(fms(x2h, x, x3h), x2l, x);
    const float32x4_t t1h = vmulq_f32(c1h, x), t1l = vfmaq_f32(fms(c1h, x, t1h), c1l, x);
    const float32x4_t t3h = vmulq_f32(c3h, x3h);
    const float32x4_t t3l = vfmaq_f32(vfmaq_f32(fms(c3h, x3h, t3h), c3l, x3h), c3h, x3l);
    const float32x4_t hi = vaddq_f32(t1h, t3h), bv = vsubq_f32(hi, t1h);
    const float32x4_t err = vaddq_f32(vsubq_f32(t1h, vsubq_f32(hi, bv)), vsubq_f32(t3h, bv));
    *lo = vaddq_f32(err, vaddq_f32(t1l, t3l));
    return hi;
}

/* sigmoid(hi + lo) with e = exp(-|w|) <= 1 (gelu.h), e = exp(-|hi|) (1 -+ lo);
 *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline float32x4_t sigmoid(float32x4_t hi, float32x4_t lo, float32x4_t *ds)
{
    const uint32x4_t pos = vcgeq_f32(hi, vdupq_n_f32(0.0f));
    const float32x4_t e0 = Sleef_expf4_u10advsimd(vnegq_f32(vabsq_f32(hi)));
    const float32x4_t e = vfmaq_f32(e0, e0, vbslq_f32(pos, vnegq_f32(lo), lo));
    const float32x4_t r = vdivq_f32(vdupq_n_f32(1.0f), vaddq_f32(vdupq_n_f32(1.0f), e));
    *ds = vmulq_f32(vmulq_f32(e, r), r);
    return vbslq_f32(pos, r, vmulq_f32(e, r));
}

/* 0.5 erfc(-x / sqrt 2) with z = hi + lo, and e = exp(-x^2 / 2) = exp(-z^2) (1 -+ ...),
   which the backward's pdf shares. */
static inline float32x4_t half_erfc(float32x4_t x, float32x4_t *e)
{
    const float32x4_t rh = vset(-LN_GELU_HI(LN_GELU_RSQRT2)),
                      rl = vset(-LN_GELU_LO(LN_GELU_RSQRT2));
    const float32x4_t zh = vmulq_f32(x, rh), zl = vfmaq_f32(fms(x, rh, zh), x, rl);
    const float32x4_t x2h = vmulq_f32(x, x), x2l = fms(x, x, x2h);
    const float32x4_t e0 = Sleef_expf4_u10advsimd(vmulq_f32(vdupq_n_f32(-0.5f), x2h));
    *e = vfmsq_f32(e0, vmulq_f32(vdupq_n_f32(0.5f), x2l), e0);
    const float32x4_t corr = vmulq_f32(vmulq_f32(zl, vset(LN_GELU_2RSQRTPI)), *e);
    return vmulq_f32(vdupq_n_f32(0.5f), vsubq_f32(Sleef_erfcf4_u15advsimd(zh), corr));
}

/* The argument uses x clamped to [-20, 20] (no Inf - Inf in the float-float parts); the
   factor x only below, so f(+Inf) = +Inf. */
static inline float32x4_t gelu(float32x4_t x, int kind)
{
    const float32x4_t xa = clamp(x), xc = clamp_lo(x);
    if (kind == LN_GELU_ERF) {
        float32x4_t e;
        return vmulq_f32(xc, half_erfc(xa, &e));
    }
    float32x4_t lo, ds; /* ds unused here: the compiler drops it */
    const float32x4_t hi = arg_w(xa, &lo);
    return vmulq_f32(xc, sigmoid(hi, lo, &ds));
}

static inline float32x4_t gelu_grad(float32x4_t x, int kind)
{
    const float32x4_t xa = clamp(x);
    if (kind == LN_GELU_ERF) {
        float32x4_t e;
        const float32x4_t h = half_erfc(xa, &e);
        return vfmaq_f32(h, xa, vmulq_f32(e, vset(LN_GELU_RSQRT2PI)));
    }
    const float32x4_t x2 = vmulq_f32(xa, xa);
    const float32x4_t dw =
        vmulq_f32(vset(LN_GELU_2C), vfmaq_f32(vdupq_n_f32(1.0f), vset(3.0 * LN_GELU_K), x2));
    float32x4_t lo, ds;
    const float32x4_t hi = arg_w(xa, &lo);
    const float32x4_t s = sigmoid(hi, lo, &ds);
    return vfmaq_f32(s, vmulq_f32(xa, dw), ds);
}

/* NEON has no masked load/store: tails go through a stack copy of len < 4 floats. */
void ln_gelu_forward_neon(const float *x, float *y, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        vst1q_f32(y + i, gelu(vld1q_f32(x + i), kind));
    if (i < n) {
        float b[W] = {0};
        memcpy(b, x + i, (n - i) * sizeof *b);
        vst1q_f32(b, gelu(vld1q_f32(b), kind));
        memcpy(y + i, b, (n - i) * sizeof *b);
    }
}

void ln_gelu_backward_neon(const float *dy, const float *x, float *dx, size_t n, int kind)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        vst1q_f32(dx + i, vmulq_f32(vld1q_f32(dy + i), gelu_grad(vld1q_f32(x + i), kind)));
    if (i < n) {
        float b[W] = {0}, d[W] = {0};
        memcpy(b, x + i, (n - i) * sizeof *b);
        memcpy(d, dy + i, (n - i) * sizeof *d);
        vst1q_f32(b, vmulq_f32(vld1q_f32(d), gelu_grad(vld1q_f32(b), kind)));
        memcpy(dx + i, b, (n - i) * sizeof *b);
    }
}
