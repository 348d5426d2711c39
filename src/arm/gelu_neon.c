/* gelu_neon.c - GELU forward/backward with AArch64 Advanced SIMD on SLEEF's vector exp and erfc. */
#include <arm_neon.h>
#include <sleef.h>
#include <string.h>

#include "gelu.h"
#include "ln_internal.h"

#define W 4

static inline float32x4_t vset(double c) { return vdupq_n_f32((float)c); }

/* max(-20, x) then, for the derivative, min(20, .): vmaxq/vminq return NaN for a NaN. */
static inline float32x4_t clamp_lo(float32x4_t x) { return vmaxq_f32(vdupq_n_f32(-LN_GELU_CLAMP), x); }
static inline float32x4_t clamp(float32x4_t x) { return vminq_f32(vdupq_n_f32(LN_GELU_CLAMP), clamp_lo(x)); }

/* sigmoid(w) with e = exp(-|w|) <= 1 (gelu.h); *ds = sigmoid (1 - sigmoid) = e r^2. */
static inline float32x4_t sigmoid(float32x4_t w, float32x4_t *ds)
{
    const float32x4_t e = Sleef_expf4_u10advsimd(vnegq_f32(vabsq_f32(w)));
    const float32x4_t r = vdivq_f32(vdupq_n_f32(1.0f), vaddq_f32(vdupq_n_f32(1.0f), e));
    *ds = vmulq_f32(vmulq_f32(e, r), r);
    return vbslq_f32(vcgeq_f32(w, vdupq_n_f32(0.0f)), r, vmulq_f32(e, r));
}

static inline float32x4_t arg_w(float32x4_t xc, float32x4_t x2)
{
    return vmulq_f32(vmulq_f32(vset(LN_GELU_2C), xc), vfmaq_f32(vdupq_n_f32(1.0f), vset(LN_GELU_K), x2));
}

static inline float32x4_t gelu(float32x4_t x, int kind)
{
    const float32x4_t xc = clamp_lo(x);
    if (kind == LN_GELU_ERF)
        return vmulq_f32(vmulq_f32(vdupq_n_f32(0.5f), xc), Sleef_erfcf4_u15advsimd(vmulq_f32(xc, vset(-LN_GELU_RSQRT2))));
    float32x4_t ds; /* unused here: the compiler drops it */
    return vmulq_f32(xc, sigmoid(arg_w(xc, vmulq_f32(xc, xc)), &ds));
}

static inline float32x4_t gelu_grad(float32x4_t x, int kind)
{
    const float32x4_t xc = clamp(x), x2 = vmulq_f32(xc, xc);
    if (kind == LN_GELU_ERF) {
        const float32x4_t half_erfc = vmulq_f32(vdupq_n_f32(0.5f), Sleef_erfcf4_u15advsimd(vmulq_f32(xc, vset(-LN_GELU_RSQRT2))));
        const float32x4_t pdf = vmulq_f32(Sleef_expf4_u10advsimd(vmulq_f32(vdupq_n_f32(-0.5f), x2)), vset(LN_GELU_RSQRT2PI));
        return vfmaq_f32(half_erfc, xc, pdf);
    }
    const float32x4_t dw = vmulq_f32(vset(LN_GELU_2C), vfmaq_f32(vdupq_n_f32(1.0f), vset(3.0 * LN_GELU_K), x2));
    float32x4_t ds;
    const float32x4_t s = sigmoid(arg_w(xc, x2), &ds);
    return vfmaq_f32(s, vmulq_f32(xc, dw), ds);
}

/* NEON has no masked load/store: tails go through a stack copy of len < 4 floats. */
static void forward_neon_gelu(const float *x, float *y, size_t n, int kind)
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

static void backward_neon_gelu(const float *dy, const float *x, float *dx, size_t n, int kind)
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

const ln_gelu_kernels ln_gelu_kernels_neon = {
    .isa = LN_ISA_NEON,
    .forward = forward_neon_gelu,
    .backward = backward_neon_gelu,
};
