/* welford.h - the fixed-order Chan merge of per-lane Welford states, shared by SIMD kernels. */
#ifndef LN_WELFORD_H
#define LN_WELFORD_H

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

#endif
