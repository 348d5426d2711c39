/* welford.h - the fixed-order Chan merge of per-lane Welford states, shared by SIMD kernels. */
#ifndef LN_WELFORD_H
#define LN_WELFORD_H

#include <stddef.h>

/* Chan's merge of (mb, sb, nb) into (ma, sa, na); an empty side leaves the other exact
   (a lone right side gives ma + (mb - 0) * 1 == mb). The cross term is d * (na w) * d,
   never d * d first: with an empty side (na w == 0) and |d| > 1.8e19, d * d would be Inf
   and Inf * 0 NaN, e.g. a constant row of 1e30 shorter than the lanes. */
static inline void ln_chan(float *ma, float *sa, float *na, float mb, float sb, float nb)
{
    const float n = *na + nb, d = mb - *ma, w = n > 0.0f ? nb / n : 0.0f;
    *ma += d * w;
    *sa += sb + d * (*na * w) * d;
    *na = n;
}

/* States of nacc accumulators of w lanes each, stored accumulator-major (m[j * w + l]),
   merged in a fixed order: accumulators pairwise (0+1, 2+3, then 01+23; nacc a power of
   two), then lanes l + ceil(w/2) into l, halving until one is left (any w: SVE vectors
   may hold 12 floats). Returns the row's (mean, M2) in m[0], s[0]. */
static inline void ln_chan_reduce(float *m, float *s, float *c, int nacc, int w)
{
    for (int step = 1; step < nacc; step *= 2)
        for (int j = 0; j + step < nacc; j += 2 * step)
            for (int l = 0; l < w; l++)
                ln_chan(&m[j * w + l], &s[j * w + l], &c[j * w + l], m[(j + step) * w + l],
                        s[(j + step) * w + l], c[(j + step) * w + l]);
    for (int width = w; width > 1;) {
        const int half = (width + 1) / 2;
        for (int l = 0; l + half < width; l++)
            ln_chan(&m[l], &s[l], &c[l], m[l + half], s[l + half], c[l + half]);
        width = half;
    }
}

/*
 * The merge coefficients of a whole row depend only on cols, so kernels compute them once
 * per call: Chan's merge of (na, ma, M2a) and (nb, mb, M2b) is then d = mb - ma, mean =
 * ma + d f1, M2 = M2a + M2b + (d f2) d, with f1 = nb/n, f2 = na nb/n (0 and 0 for an
 * empty pair, a no-op). The tree is the one ln_chan_reduce walks, for power-of-two w:
 * merge k of the accumulator pairs (0+1, 2+3, ..., then 0+2, ...) uses f[k * w + l];
 * then lane level v (lane l takes lane l + w/2^(v+1)) uses f[(nacc - 1 + v) * w + l].
 * cnt[j * w + l] is how many values lane l of accumulator j saw; it is consumed.
 */
#define LN_PLAN_MAX(nacc, w) (((nacc)-1 + 6) * (w)) /* w <= 64 lanes */

static inline void ln_chan_coef(double na, double nb, float *f1, float *f2)
{
    const double n = na + nb;
    *f1 = n > 0 ? (float)(nb / n) : 0.0f;
    *f2 = n > 0 ? (float)(na * nb / n) : 0.0f;
}

static inline void ln_chan_plan(double *cnt, int nacc, int w, float *f1, float *f2)
{
    int k = 0;
    for (int step = 1; step < nacc; step *= 2)
        for (int j = 0; j + step < nacc; j += 2 * step, k++)
            for (int l = 0; l < w; l++) {
                ln_chan_coef(cnt[j * w + l], cnt[(j + step) * w + l], &f1[k * w + l],
                             &f2[k * w + l]);
                cnt[j * w + l] += cnt[(j + step) * w + l];
            }
    for (int h = w / 2; h > 0; h /= 2, k++)
        for (int l = 0; l < w; l++) {
            f1[k * w + l] = f2[k * w + l] = 0.0f;
            if (l < h) {
                ln_chan_coef(cnt[l], cnt[l + h], &f1[k * w + l], &f2[k * w + l]);
                cnt[l] += cnt[l + h];
            }
        }
}

/* The lane counts of the bf16 kernels' Welford: nblk full blocks of nacc vectors, then
   the rem < nacc * w values left, vector j of them into accumulator j. */
static inline void ln_welford_counts(double *cnt, size_t n, int nacc, int w)
{
    const size_t blk = (size_t)nacc * (size_t)w, nblk = n / blk, rem = n - nblk * blk;
    for (int i = 0; i < nacc * w; i++)
        cnt[i] = (double)nblk + ((size_t)i < rem);
}

/* A call's plan for nacc <= 4 accumulators of w <= 16 lanes (AVX-512's width). */
typedef struct ln_welford_plan {
    float f1[LN_PLAN_MAX(4, 16)], f2[LN_PLAN_MAX(4, 16)];
} ln_welford_plan;

static inline void ln_welford_plan_init(ln_welford_plan *p, size_t n, int nacc, int w)
{
    double cnt[4 * 16];
    ln_welford_counts(cnt, n, nacc, w);
    ln_chan_plan(cnt, nacc, w, p->f1, p->f2);
}

#endif
