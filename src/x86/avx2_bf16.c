/* avx2_bf16.c - bf16 LayerNorm with AVX2+FMA: float32 Welford on widened lanes, RNE stores. */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "bf16_kernel.h"
#include "welford.h"

#define W 8    /* float lanes */
#define NACC 4 /* independent Welford accumulators: breaks the sub-fma-sub-fma chain */

/* bf16 -> float is exact: zero-extend to 32 bits, shift into the high half. */
static inline __m256 widen(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __m256 load8(const uint16_t *p) { return widen(_mm_loadu_si128((const __m128i *)p)); }

/* AVX2 has no 16-bit masked load: a tail (len < 8) goes through a zeroed stack copy, so
   nothing outside the row is read. */
static inline __m256 load_part(const uint16_t *p, size_t len)
{
    uint16_t b[W] = {0};
    memcpy(b, p, len * sizeof *p);
    return load8(b);
}

static inline __m256i lane_mask(size_t len)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)len),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Round to nearest even on the bits, NaN made quiet: the lane form of ln_f32_to_bf16,
   bf16 in the low half of each 32-bit lane. nan_free: the caller knows no lane is NaN,
   which saves the compare and blend (a NaN would carry into the exponent instead). */
static inline __m256i round_bits(__m256 v, int nan_free)
{
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i rne = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    if (nan_free)
        return rne;
    const __m256i qnan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rne, qnan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

static inline __m128i narrow(__m256 v)
{
    const __m256i r = round_bits(v, 0);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* 16 results in one store: packus interleaves the 128-bit halves, the permute restores
   element order. */
static inline void store16(uint16_t *p, __m256 v0, __m256 v1, int nan_free)
{
    const __m256i r = _mm256_packus_epi32(round_bits(v0, nan_free), round_bits(v1, nan_free));
    _mm256_storeu_si256((__m256i *)p, _mm256_permute4x64_epi64(r, 0xD8));
}

static inline void store_part(uint16_t *p, __m256 v, size_t len)
{
    uint16_t b[W];
    _mm_storeu_si128((__m128i *)b, narrow(v));
    memcpy(p, b, len * sizeof *p);
}

/* gamma/beta-like float operands: len lanes, the rest (never read) as `fill`. */
static inline __m256 loadf(const float *p, size_t len, float fill)
{
    if (!p)
        return _mm256_set1_ps(fill);
    if (len == W)
        return _mm256_loadu_ps(p);
    return _mm256_maskload_ps(p, lane_mask(len));
}

typedef ln_welford_plan plan; /* merge coefficients for every row of a call */

static inline void merge(__m256 *ma, __m256 *sa, __m256 mb, __m256 sb, const plan *p, int k)
{
    const __m256 d = _mm256_sub_ps(mb, *ma);
    *ma = _mm256_fmadd_ps(d, _mm256_loadu_ps(p->f1 + k * W), *ma);
    *sa = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_loadu_ps(p->f2 + k * W)), d,
                          _mm256_add_ps(*sa, sb));
}

static void row_stats(const uint16_t *x, size_t n, const plan *p, float *mean, float *m2)
{
    __m256 m[NACC], s[NACC];
    for (int j = 0; j < NACC; j++)
        m[j] = s[j] = _mm256_setzero_ps();
    const size_t nblk = n / (W * NACC);
    for (size_t b = 0; b < nblk; b++) {
        /* Every lane of every accumulator has seen b+1 values: one broadcast reciprocal. */
        const __m256 inv = _mm256_set1_ps(1.0f / (float)(b + 1));
        /* Widening by interleaving with zero words puts each bf16 in the high half of a
           32-bit lane in one instruction; the lanes get the 32 values in a permuted but
           fixed order, which a full block may do: every lane counts b + 1 either way. */
        __m256 v[NACC];
        for (int h = 0; h < NACC / 2; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x + (b * NACC + 2 * h) * W));
            v[2 * h] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), q));
            v[2 * h + 1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), q));
        }
        for (int j = 0; j < NACC; j++) {
            const __m256 d = _mm256_sub_ps(v[j], m[j]);
            m[j] = _mm256_fmadd_ps(d, inv, m[j]);
            s[j] = _mm256_fmadd_ps(d, _mm256_sub_ps(v[j], m[j]), s[j]);
        }
    }
    /* The last < 32 values: accumulator j takes the j-th group of 8; lanes past the row
       keep their state (the plan counts them one short). */
    const size_t rem = n - nblk * W * NACC;
    const __m256 inv = _mm256_set1_ps(1.0f / (float)(nblk + 1));
    for (int j = 0; j < NACC; j++) {
        const size_t off = (size_t)j * W, len = rem > off ? (rem - off < W ? rem - off : W) : 0;
        if (!len)
            continue;
        const uint16_t *q = x + nblk * W * NACC + off;
        const __m256 v = len == W ? load8(q) : load_part(q, len), d = _mm256_sub_ps(v, m[j]);
        const __m256 act = _mm256_castsi256_ps(lane_mask(len));
        const __m256 mn = _mm256_fmadd_ps(d, inv, m[j]);
        s[j] = _mm256_blendv_ps(s[j], _mm256_fmadd_ps(d, _mm256_sub_ps(v, mn), s[j]), act);
        m[j] = _mm256_blendv_ps(m[j], mn, act);
    }
    /* The plan's fixed order: accumulators pairwise (0+1, 2+3, ..., 0+2, ..., 0+4), then
       lanes l+4, l+2, l+1. */
    int k = 0;
    for (int step = 1; step < NACC; step *= 2)
        for (int j = 0; j + step < NACC; j += 2 * step)
            merge(&m[j], &s[j], m[j + step], s[j + step], p, k++);
    merge(&m[0], &s[0], _mm256_permute2f128_ps(m[0], m[0], 1),
          _mm256_permute2f128_ps(s[0], s[0], 1), p, k);
    merge(&m[0], &s[0], _mm256_permute_ps(m[0], 0x4E), _mm256_permute_ps(s[0], 0x4E), p, k + 1);
    merge(&m[0], &s[0], _mm256_permute_ps(m[0], 0xB1), _mm256_permute_ps(s[0], 0xB1), p, k + 2);
    *mean = _mm256_cvtss_f32(m[0]);
    *m2 = _mm256_cvtss_f32(s[0]);
}

/* Centered apply: (x - mean) * (rstd * gamma) + beta, so a constant row gives beta. */
static inline __m256 apply(__m256 v, __m256 vm, __m256 vr, const ln_bf16_fwd_args *a, size_t i,
                           size_t len)
{
    const __m256 sc = a->gamma ? _mm256_mul_ps(loadf(a->gamma + i, len, 0.0f), vr) : vr;
    return _mm256_fmadd_ps(_mm256_sub_ps(v, vm), sc,
                           loadf(a->beta ? a->beta + i : NULL, len, 0.0f));
}

/* The full vectors of a row, 16 at a time, with gamma/beta presence fixed per loop
   (hg, hb are constants after inlining) so the loop tests nothing but its bound. */
static inline __attribute__((always_inline)) size_t apply_row(const uint16_t *x, const float *g,
                                                              const float *b, uint16_t *y, size_t n,
                                                              __m256 vm, __m256 vr, int hg, int hb,
                                                              int nan_free)
{
    size_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        __m256 v[2];
        for (int h = 0; h < 2; h++) {
            const size_t o = i + (size_t)h * W;
            const __m256 sc = hg ? _mm256_mul_ps(_mm256_loadu_ps(g + o), vr) : vr;
            const __m256 c = _mm256_sub_ps(load8(x + o), vm);
            v[h] = hb ? _mm256_fmadd_ps(c, sc, _mm256_loadu_ps(b + o)) : _mm256_mul_ps(c, sc);
        }
        store16(y + i, v[0], v[1], nan_free);
    }
    return i;
}

/* No output can be NaN when the statistics, rstd * max|gamma| and every beta are finite:
   (x - mean) * scale is then finite or +-Inf (overflow), never 0 * Inf, and adding a
   finite beta keeps it so. `finite_gmax` is max|gamma| (1 without gamma) if all of gamma
   and beta are finite, else Inf: computed once per call. */
static float finite_gmax(const ln_bf16_fwd_args *a)
{
    float gmax = a->gamma ? 0.0f : 1.0f;
    for (size_t j = 0; j < a->cols; j++) {
        const float g = a->gamma ? fabsf(a->gamma[j]) : 0.0f;
        if (!(g <= FLT_MAX) || (a->beta && !(fabsf(a->beta[j]) <= FLT_MAX)))
            return INFINITY; /* NaN fails <= too */
        gmax = g > gmax ? g : gmax;
    }
    return gmax;
}

void ln_bf16_forward_avx2(const ln_bf16_fwd_args *a, size_t r0, size_t r1)
{
    const size_t n = a->cols;
    plan p;
    ln_welford_plan_init(&p, n, NACC, W);
    const float gmax = finite_gmax(a);
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *x = a->x + r * a->ldx;
        uint16_t *y = a->y + r * a->ldy;
        float mean, m2;
        row_stats(x, n, &p, &mean, &m2);
        const float rstd = 1.0f / sqrtf(m2 / (float)n + a->eps);
        const __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rstd);
        const int nf = isfinite(mean) && isfinite(rstd) && isfinite(rstd * gmax);
        const float *g = a->gamma, *b = a->beta;
        size_t i;
        if (g && b)
            i = nf ? apply_row(x, g, b, y, n, vm, vr, 1, 1, 1)
                   : apply_row(x, g, b, y, n, vm, vr, 1, 1, 0);
        else if (g)
            i = nf ? apply_row(x, g, b, y, n, vm, vr, 1, 0, 1)
                   : apply_row(x, g, b, y, n, vm, vr, 1, 0, 0);
        else if (b)
            i = nf ? apply_row(x, g, b, y, n, vm, vr, 0, 1, 1)
                   : apply_row(x, g, b, y, n, vm, vr, 0, 1, 0);
        else
            i = nf ? apply_row(x, g, b, y, n, vm, vr, 0, 0, 1)
                   : apply_row(x, g, b, y, n, vm, vr, 0, 0, 0);
        for (; i + W <= n; i += W)
            _mm_storeu_si128((__m128i *)(y + i), narrow(apply(load8(x + i), vm, vr, a, i, W)));
        if (i < n)
            store_part(y + i, apply(load_part(x + i, n - i), vm, vr, a, i, n - i), n - i);
        if (a->mean)
            a->mean[r] = mean;
        if (a->rstd)
            a->rstd[r] = rstd;
    }
}

static inline float hsum(__m256 v)
{
    float t[W];
    _mm256_storeu_ps(t, v);
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}

static inline void add_part(float *p, __m256 v, size_t len)
{
    if (len == W) {
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), v));
    } else {
        const __m256i k = lane_mask(len);
        _mm256_maskstore_ps(p, k, _mm256_add_ps(_mm256_maskload_ps(p, k), v));
    }
}

/* Pass 1 on the 8 values at i (len of them): the sums of g and g*xhat, and this row's
   dy*xhat, dy added to the partials. */
static inline void pass1(const ln_bf16_bwd_args *a, const uint16_t *dy, const uint16_t *x, size_t i,
                         size_t len, __m256 vm, __m256 vr, __m256 *sg, __m256 *sgx, float *dgamma,
                         float *dbeta)
{
    const __m256 d = len == W ? load8(dy + i) : load_part(dy + i, len);
    const __m256 xh =
        _mm256_mul_ps(_mm256_sub_ps(len == W ? load8(x + i) : load_part(x + i, len), vm), vr);
    const __m256 g = a->gamma ? _mm256_mul_ps(d, loadf(a->gamma + i, len, 0.0f)) : d;
    *sg = _mm256_add_ps(*sg, g);
    *sgx = _mm256_fmadd_ps(g, xh, *sgx);
    if (dgamma)
        add_part(dgamma + i, _mm256_mul_ps(d, xh), len);
    if (dbeta)
        add_part(dbeta + i, d, len);
}

/* dx at i: rstd (g - mean(g) - xhat mean(g xhat)), len values (all 8 for a full one). */
static inline __m256 dx8(const ln_bf16_bwd_args *a, const uint16_t *dy, const uint16_t *x, size_t i,
                         size_t len, __m256 vm, __m256 vr, __m256 mg, __m256 mgx)
{
    const __m256 d = len == W ? load8(dy + i) : load_part(dy + i, len);
    const __m256 xh =
        _mm256_mul_ps(_mm256_sub_ps(len == W ? load8(x + i) : load_part(x + i, len), vm), vr);
    const __m256 g = a->gamma ? _mm256_mul_ps(d, loadf(a->gamma + i, len, 0.0f)) : d;
    return _mm256_mul_ps(vr, _mm256_fnmadd_ps(xh, mgx, _mm256_sub_ps(g, mg)));
}

/* One row: pass 1 (dy is read before dx, which may be dy, is written), then pass 2 writes
   dx. Full vectors first, two sum pairs alternating (a fixed order: even vectors into
   the first pair), 16 dx per store; the tail once, at the end, into the first pair. */
static void backward_row(const ln_bf16_bwd_args *a, size_t r, float *dgamma, float *dbeta)
{
    const size_t n = a->cols;
    const uint16_t *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
    const __m256 vm = _mm256_set1_ps(a->mean[r]), vr = _mm256_set1_ps(a->rstd[r]);
    __m256 sg[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, sgx[2] = {sg[0], sg[1]};
    size_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        pass1(a, dy, x, i, W, vm, vr, &sg[0], &sgx[0], dgamma, dbeta);
        pass1(a, dy, x, i + W, W, vm, vr, &sg[1], &sgx[1], dgamma, dbeta);
    }
    for (; i < n; i += W)
        pass1(a, dy, x, i, n - i < W ? n - i : W, vm, vr, &sg[0], &sgx[0], dgamma, dbeta);
    if (!a->dx)
        return;
    uint16_t *dx = a->dx + r * a->lddx;
    const __m256 mg = _mm256_set1_ps(hsum(_mm256_add_ps(sg[0], sg[1])) / (float)n);
    const __m256 mgx = _mm256_set1_ps(hsum(_mm256_add_ps(sgx[0], sgx[1])) / (float)n);
    for (i = 0; i + 2 * W <= n; i += 2 * W)
        store16(dx + i, dx8(a, dy, x, i, W, vm, vr, mg, mgx),
                dx8(a, dy, x, i + W, W, vm, vr, mg, mgx), 0);
    for (; i + W <= n; i += W)
        _mm_storeu_si128((__m128i *)(dx + i), narrow(dx8(a, dy, x, i, W, vm, vr, mg, mgx)));
    if (i < n)
        store_part(dx + i, dx8(a, dy, x, i, n - i, vm, vr, mg, mgx), n - i);
}

void ln_bf16_backward_avx2(const ln_bf16_bwd_args *a, size_t r0, size_t r1, float *dgamma,
                           float *dbeta)
{
    ln_bf16_backward_rows(a, r0, r1, dgamma, dbeta, backward_row);
}
