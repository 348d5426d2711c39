/* avx512_bf16.c - bf16 LayerNorm with AVX-512: float32 Welford on widened lanes, RNE stores. */
#include <immintrin.h>
#include <math.h>

#include "bf16_kernel.h"
#include "welford.h"

#define W 16   /* float lanes */
#define NACC 4 /* independent Welford accumulators: breaks the sub-fma-sub-fma chain */

static inline __mmask16 mask16(size_t len)
{
    return len >= W ? (__mmask16)0xFFFF : (__mmask16)((1u << len) - 1u);
}

/* Masked (len < 16: lanes past the row are neither read nor faulted on), then exact:
   zero-extend to 32 bits, shift into the high half. */
static inline __m512 load16(const uint16_t *p, size_t len)
{
    const __m256i h = _mm256_maskz_loadu_epi16(mask16(len), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __m512 loadf(const float *p, size_t len, float fill)
{
    return p ? _mm512_maskz_loadu_ps(mask16(len), p) : _mm512_set1_ps(fill);
}

/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16. */
static inline __m256i narrow_shift(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    const __m512i rne = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(rne, nan, hi, _mm512_set1_epi32(0x40)));
}

/* vcvtne2ps2bf16 (AVX512_BF16): 32 floats to 32 bf16 in one instruction, rounding to
   nearest even and quieting NaN as above. Inline asm, so this file needs no BF16 flag
   that would let the compiler emit BF16 instructions where the CPU lacks them; only the
   table selected by the CPU check reaches it. */
static inline __m512i cvtne2(__m512 lo, __m512 hi)
{
    __m512i r;
    __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi), "v"(lo));
    return r;
}

/* Stores 32 results (len <= 32 of them). The BF16 instruction flushes float subnormals to
   zero; such lanes are rare (|v| < 2^-126), so a vector holding one takes the shift path
   and both variants give identical bits. */
static inline void store32(uint16_t *p, __m512 lo, __m512 hi, size_t len, int native)
{
    const __mmask32 k = len >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << len) - 1u);
    __m512i r;
    if (native && !(_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)))
        r = cvtne2(lo, hi);
    else
        r = _mm512_inserti64x4(_mm512_castsi256_si512(narrow_shift(lo)), narrow_shift(hi), 1);
    _mm512_mask_storeu_epi16(p, k, r);
}

typedef ln_welford_plan plan; /* merge coefficients for every row of a call */

static inline void merge(__m512 *ma, __m512 *sa, __m512 mb, __m512 sb, const plan *p, int k)
{
    const __m512 d = _mm512_sub_ps(mb, *ma);
    *ma = _mm512_fmadd_ps(d, _mm512_loadu_ps(p->f1 + k * W), *ma);
    *sa = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_loadu_ps(p->f2 + k * W)), d,
                          _mm512_add_ps(*sa, sb));
}

static void row_stats(const uint16_t *x, size_t n, const plan *p, float *mean, float *m2)
{
    __m512 m[NACC], s[NACC];
    for (int j = 0; j < NACC; j++)
        m[j] = s[j] = _mm512_setzero_ps();
    const size_t nblk = n / (W * NACC);
    for (size_t b = 0; b < nblk; b++) {
        /* Every lane of every accumulator has seen b+1 values: one broadcast reciprocal. */
        const __m512 inv = _mm512_set1_ps(1.0f / (float)(b + 1));
        for (int j = 0; j < NACC; j++) {
            const __m512 v = load16(x + (b * NACC + j) * W, W), d = _mm512_sub_ps(v, m[j]);
            m[j] = _mm512_fmadd_ps(d, inv, m[j]);
            s[j] = _mm512_fmadd_ps(d, _mm512_sub_ps(v, m[j]), s[j]);
        }
    }
    /* The last < 64 values: accumulator j takes the j-th group of 16; lanes past the row
       keep their state (the plan counts them one short). */
    const size_t rem = n - nblk * W * NACC;
    const __m512 inv = _mm512_set1_ps(1.0f / (float)(nblk + 1));
    for (int j = 0; j < NACC; j++) {
        const size_t off = (size_t)j * W, len = rem > off ? rem - off : 0;
        const __mmask16 k = mask16(len);
        const __m512 v = load16(x + nblk * W * NACC + off, len), d = _mm512_sub_ps(v, m[j]);
        const __m512 mn = _mm512_fmadd_ps(d, inv, m[j]);
        s[j] = _mm512_mask_mov_ps(s[j], k, _mm512_fmadd_ps(d, _mm512_sub_ps(v, mn), s[j]));
        m[j] = _mm512_mask_mov_ps(m[j], k, mn);
    }
    /* The plan's fixed order: accumulators 0+1, 2+3, 0+2, then lanes l+8, l+4, l+2, l+1. */
    merge(&m[0], &s[0], m[1], s[1], p, 0);
    merge(&m[2], &s[2], m[3], s[3], p, 1);
    merge(&m[0], &s[0], m[2], s[2], p, 2);
    merge(&m[0], &s[0], _mm512_shuffle_f32x4(m[0], m[0], 0x4E),
          _mm512_shuffle_f32x4(s[0], s[0], 0x4E), p, 3);
    merge(&m[0], &s[0], _mm512_shuffle_f32x4(m[0], m[0], 0xB1),
          _mm512_shuffle_f32x4(s[0], s[0], 0xB1), p, 4);
    merge(&m[0], &s[0], _mm512_permute_ps(m[0], 0x4E), _mm512_permute_ps(s[0], 0x4E), p, 5);
    merge(&m[0], &s[0], _mm512_permute_ps(m[0], 0xB1), _mm512_permute_ps(s[0], 0xB1), p, 6);
    *mean = _mm512_cvtss_f32(m[0]);
    *m2 = _mm512_cvtss_f32(s[0]);
}

/* Centered apply: (x - mean) * (rstd * gamma) + beta, so a constant row gives beta. */
static inline __m512 apply(const uint16_t *x, __m512 vm, __m512 vr, const ln_bf16_fwd_args *a,
                           size_t i, size_t len)
{
    const __m512 sc = a->gamma ? _mm512_mul_ps(loadf(a->gamma + i, len, 0.0f), vr) : vr;
    return _mm512_fmadd_ps(_mm512_sub_ps(load16(x + i, len), vm), sc,
                           loadf(a->beta ? a->beta + i : NULL, len, 0.0f));
}

static inline __attribute__((always_inline)) void forward_rows(const ln_bf16_fwd_args *a, size_t r0,
                                                               size_t r1, int native)
{
    const size_t n = a->cols;
    plan p;
    ln_welford_plan_init(&p, n, NACC, W);
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        float mean, m2;
        row_stats(x, n, &p, &mean, &m2);
        const float rstd = 1.0f / sqrtf(m2 / (float)n + a->eps);
        const __m512 vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rstd);
        for (size_t i = 0; i < n; i += 2 * W) {
            const size_t len = n - i, hlen = len > W ? len - W : 0;
            const __m512 lo = apply(x, vm, vr, a, i, len);
            const __m512 hi = hlen ? apply(x, vm, vr, a, i + W, hlen) : _mm512_setzero_ps();
            store32(y + i, lo, hi, len, native);
        }
        if (a->mean)
            a->mean[r] = mean;
        if (a->rstd)
            a->rstd[r] = rstd;
    }
}

static inline float hsum(__m512 v)
{
    float t[W];
    _mm512_storeu_ps(t, v);
    for (int half = W / 2; half > 0; half /= 2) /* fixed tree order */
        for (int l = 0; l < half; l++)
            t[l] += t[l + half];
    return t[0];
}

static inline void add_part(float *p, __m512 v, size_t len)
{
    const __mmask16 k = mask16(len);
    _mm512_mask_storeu_ps(p, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, p), v));
}

static inline __m512 grad_g(const ln_bf16_bwd_args *a, const uint16_t *dy, size_t i, size_t len)
{
    const __m512 d = load16(dy + i, len);
    return a->gamma ? _mm512_mul_ps(d, loadf(a->gamma + i, len, 0.0f)) : d;
}

/* One row: pass 1 sums g and g*xhat and adds this row's dy*xhat, dy to the partials
   (dy is read before dx, which may be dy, is written); pass 2 writes dx. */
static inline __attribute__((always_inline)) void
backward_row(const ln_bf16_bwd_args *a, size_t r, float *dgamma, float *dbeta, int native)
{
    const size_t n = a->cols;
    const uint16_t *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
    const __m512 vm = _mm512_set1_ps(a->mean[r]), vr = _mm512_set1_ps(a->rstd[r]);
    __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += W) {
        const size_t len = n - i;
        const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(load16(x + i, len), vm), vr);
        const __m512 g = grad_g(a, dy, i, len);
        sg = _mm512_add_ps(sg, g);
        sgx = _mm512_fmadd_ps(g, xh, sgx);
        if (dgamma)
            add_part(dgamma + i, _mm512_mul_ps(load16(dy + i, len), xh), len);
        if (dbeta)
            add_part(dbeta + i, load16(dy + i, len), len);
    }
    if (!a->dx)
        return;
    uint16_t *dx = a->dx + r * a->lddx;
    const __m512 mg = _mm512_set1_ps(hsum(sg) / (float)n),
                 mgx = _mm512_set1_ps(hsum(sgx) / (float)n);
    __m512 v[2];
    for (size_t i = 0; i < n; i += 2 * W) {
        for (int h = 0; h < 2; h++) {
            const size_t o = i + (size_t)h * W, len = n > o ? n - o : 0;
            const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(load16(x + o, len), vm), vr);
            const __m512 g = grad_g(a, dy, o, len);
            v[h] = _mm512_mul_ps(vr, _mm512_fnmadd_ps(xh, mgx, _mm512_sub_ps(g, mg)));
        }
        store32(dx + i, v[0], v[1], n - i, native);
    }
}

static void backward_row_shift(const ln_bf16_bwd_args *a, size_t r, float *dg, float *db)
{
    backward_row(a, r, dg, db, 0);
}

static void backward_row_native(const ln_bf16_bwd_args *a, size_t r, float *dg, float *db)
{
    backward_row(a, r, dg, db, 1);
}

void ln_bf16_forward_avx512(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    forward_rows(a, r0, r1, 0);
}
void ln_bf16_forward_avx512bf16(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    forward_rows(a, r0, r1, 1);
}

void ln_bf16_backward_avx512(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                             float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, backward_row_shift);
}

void ln_bf16_backward_avx512bf16(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dg,
                                 float *db)
{
    ln_bf16_backward_rows(a, r0, r1, dg, db, backward_row_native);
}
