/* plan.h - the Welford/Chan plan's ISA-independent part: step reciprocals, merge coefficients. */
#ifndef LN_KERNELS_PLAN_H
#define LN_KERNELS_PLAN_H

/*
 * Every kernel's statistics (the fixed-width bodies in ln_common.h, SVE's loop in
 * arm/sve_stats.h) take the same steps: values shifted by each lane's first value, k
 * accumulators fed a vector per block, the vectors left over after the blocks into the
 * first accumulators, the accumulators merged pairwise (stride 1, 2, 4), the tail lanes'
 * one value each into the merged vector, then the lanes halved until one is left. The
 * coefficients of those merges depend only on cols and the lane count: these functions
 * compute them once per call, from the counts each side has seen.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>

/* 1/c for the Welford update counts c = 1..256, folded by the compiler with the same
   correctly rounded division the loop would do (so the bits do not depend on whether a
   count comes from the table): a divide per block was ~15% of the statistics pass. */
#define LN_R1(c) 1.0f / (float)(c)
#define LN_R4(c) LN_R1(c), LN_R1(c + 1), LN_R1(c + 2), LN_R1(c + 3)
#define LN_R16(c) LN_R4(c), LN_R4(c + 4), LN_R4(c + 8), LN_R4(c + 12)
#define LN_R64(c) LN_R16(c), LN_R16(c + 16), LN_R16(c + 32), LN_R16(c + 48)
#define LN_NRECIP 256
static const float ln_recip[LN_NRECIP] = {LN_R64(1), LN_R64(65), LN_R64(129), LN_R64(193)};

static inline float ln_recip_of(size_t c)
{
    return c <= LN_NRECIP ? ln_recip[c - 1] : 1.0f / (float)c;
}

/*
 * Chan's merge of (na, ma, M2a) and (nb, mb, M2b): d = mb - ma, mean = ma + d*f1, M2 =
 * M2a + M2b + d*(d*f2) with f1 = nb/n, f2 = na*nb/n (both 0 when n == 0, so empty
 * partners are no-ops). d*(d*f2) rather than (d*d)*f2: an empty partner then gives 0
 * even if d*d would overflow.
 */
static inline void chan_coef(double na, double nb, float *f1, float *f2)
{
    const double n = na + nb, q = n > 0 ? 1.0 / n : 0.0;
    *f1 = (float)(nb * q);
    *f2 = (float)(na * nb * q);
}

/* The accumulator tree: accumulator j of k (a power of two, at most 8) has seen nblk + (j < rv)
   vectors; merge m of the pairwise tree uses f1[m], f2[m] (k - 1 merges). Equal counts
   need no division (the plan is per call, so kept cheap). */
static inline void ln_plan_acc(size_t nblk, unsigned rv, unsigned k, float *f1, float *f2)
{
    double cnt[8];
    for (unsigned j = 0; j < k; j++)
        cnt[j] = (double)(nblk + (j < rv));
    unsigned m = 0;
    for (unsigned s = 1; s < k; s *= 2)
        for (unsigned j = 0; j + s < k; j += 2 * s, m++) {
            if (rv == 0 && cnt[j] == cnt[j + s]) {
                f1[m] = 0.5f;
                f2[m] = (float)(0.5 * cnt[j]);
            } else {
                chan_coef(cnt[j], cnt[j + s], &f1[m], &f2[m]);
            }
            cnt[j] += cnt[j + s];
        }
}

/* The lane tree without a tail on a power-of-two width: level lv merges equal counts
   nv 2^lv, so f1 = 1/2 and f2 = u[lv] (no arrays, no division). */
static inline void ln_plan_lane_u(size_t nv, unsigned levels, float *u)
{
    for (unsigned lv = 0; lv < levels; lv++)
        u[lv] = (float)(0.5 * (double)nv * (double)(1u << lv));
}

/* The lane tree of w lanes (any w up to 64) after a tail: lane l has seen nv + (l < t) values.
   Level lv (live width v, h = ceil(v/2)) merges lane l + h into lane l for l < v - h
   with f1[lv * stride + l], f2[...]; every other lane of the w gets 0 (a no-op, or a
   lane no later level reads). For a power of two, h = w >> (lv + 1). */
static inline void ln_plan_lanes(size_t nv, unsigned t, unsigned w, float *f1, float *f2,
                                 size_t stride)
{
    double lc[64];
    for (unsigned l = 0; l < w; l++)
        lc[l] = (double)nv + (l < t);
    unsigned lv = 0;
    for (unsigned v = w; v > 1; lv++) {
        const unsigned h = (v + 1) / 2;
        float *g1 = f1 + lv * stride, *g2 = f2 + lv * stride;
        for (unsigned l = 0; l < w; l++) {
            if (l + h < v) {
                chan_coef(lc[l], lc[l + h], &g1[l], &g2[l]);
                lc[l] += lc[l + h];
            } else {
                g1[l] = g2[l] = 0.0f;
            }
        }
        v = h;
    }
}

/* Blocks between re-centerings of the statistics' shifts (see ln_recenter in the bodies). */
#define LN_RECENTER 16

/* Re-center after block b (0-based)? After blocks 1 and 4, then every LN_RECENTER: a far
   first value moves a lane's mean by ~1/N of its distance after N blocks, so the early
   re-centerings catch up with it while the roundings are still small (1, 2, 4, 8 measured
   within 2.8 ulps of rstd on first-value outliers, 1, 4 within 3.9, every 16 alone 6.6;
   each run boundary costs spills: 1, 2, 4, 8 was +0.2 instructions per element at 768).
   Block 0 now starts each lane at its own first value exactly, so the re-centering after
   it changes nothing (m = 0 there): the fixed-width bodies skip it. */
static inline int ln_recenter_after(size_t b)
{
    return b == 0 || b == 3 || b % LN_RECENTER == LN_RECENTER - 1;
}

/* The first block after block b's run: the next b' > b with ln_recenter_after(b' - 1). */
static inline size_t ln_recenter_next(size_t b)
{
    return b < 1 ? 1 : b < 4 ? 4 : (b / LN_RECENTER + 1) * LN_RECENTER;
}

/*
 * The float statistics left their range when M2 (or RMSNorm's sum of squares) overflowed
 * (Inf, or NaN from Inf - Inf: |x - mean| above ~1e19/sqrt(n), or |x| for RMSNorm), when
 * var + eps overflowed (an eps near FLT_MAX: var + eps = Inf made rstd 0 and y 0, where
 * double gives rstd ~5e-20, a normal float), or when var + eps fell below 2^-100, where
 * the squares underflowed into the subnormals: there M2 carries an absolute error of up
 * to ~3n 2^-150 (one rounding per operation), so var is off by ~3 2^-150 -- below 2^-48
 * of var + eps whenever var + eps >= 2^-100, the test's threshold. A NaN input also lands
 * here, and stays NaN. The caller's rstd already computed var + eps: compilers share it.
 * LN_STATS_IN_RANGE takes a float or a GCC vector of floats (then a lane mask), so a
 * four-row group tests its rows against the same bounds as a single row.
 */
#define LN_STATS_IN_RANGE(m2, t) (((m2) <= 3.0e38f) & ((t) >= 0x1p-100f) & ((t) <= FLT_MAX))
static inline int ln_stats_out_of_range(float m2, size_t n, float eps)
{
    const float t = m2 / (float)n + eps;
    return !LN_STATS_IN_RANGE(m2, t);
}

/*
 * rstd = 1 / sqrt(M2 / n + eps) in double, rounded once to float: the float steps (divide,
 * add, sqrt, divide) put 1.5 2^-24 of their own on it, the double ones ~2^-52, so rstd
 * carries half of M2's relative error plus its one rounding -- the margin M2's float
 * sums need on heavy-tailed rows (one lane holding most of M2 through every merge:
 * rstd 4.9 2^-24 from float steps against the contract's 4).
 */
static inline float ln_rstd_of(float m2, size_t n, float eps)
{
    /* Two statements: a compiler that contracts within one (clang's default) would fuse
       the product into the add here and maybe not in the four-lane form (stats_finish4),
       and a row's bits must not depend on which of the two it took. */
    const double v = (double)m2 * (1.0 / (double)n);
    return (float)(1.0 / sqrt(v + (double)eps));
}

/*
 * The rare row out of range, redone in double (range 1e308: squares of any float, and of
 * any float's difference, are finite and normal): mean by a sum, then M2 about it (two
 * passes; a double sum of n <= 2^20 floats errs by < 2^-33 relative, far below float).
 * The mean goes out as mean + dmean, dmean = the double mean minus the float one rounded
 * to float, so the apply centers on it as precisely as on the fast path's. get(p, q, i)
 * gives the row's i-th value as float.
 */
typedef float (*ln_row_get)(const void *p, const void *q, size_t i);
static inline void ln_rescue_row(ln_row_get get, const void *p, const void *q, size_t n,
                                 int rms, float eps, float *mean, float *dmean, float *rstd)
{
    double s = 0.0, v = 0.0;
    if (!rms)
        for (size_t i = 0; i < n; i++)
            s += (double)get(p, q, i);
    const double m = s / (double)n;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)get(p, q, i) - m;
        v += d * d;
    }
    *mean = (float)m;
    *dmean = (float)(m - (double)*mean);
    /* v is Inf only where a value is (double holds the square of any float's distance):
       then rstd is NaN, so the row's outputs are NaN as a LayerNorm row's are (Inf - Inf),
       not RMSNorm's 0 from rstd = 1/Inf. */
    *rstd = isinf(v) ? NAN : (float)(1.0 / sqrt(v / (double)n + (double)eps));
}

/*
 * The backward's correction of the saved float mean m: delta = sum(x - m)/n (a float sum),
 * limited to |delta| <= 2^-22 |m| + 2^-149. The correction is there for offset rows
 * (|mean| >> sigma), where m is off by up to |mean| 2^-23 (the forward's mean bound) and
 * x - m is small and exact, so the sum is accurate and the limit never binds. Where
 * sigma is not small against |mean|, m's rounding is a small part of x - mean and needs
 * no correction, but the sum is inexact: lanes of same-signed large values (rows
 * alternating +-1e4, whose mean is 0.15) grow partial sums whose rounding moved the
 * centre by 1.3e-5 sigma (dgamma 1.9e-5). The limit keeps that error within the bound.
 * Both paths (bwd_constants, the four-row lanes) form it by the same double operations,
 * so they get the same bits (with NaN m nothing is limited: that row is NaN anyway).
 */
static inline double ln_mean_fix(double d, float m)
{
    /* Plus one subnormal spacing: a subnormal m is resolved only to 2^-149, which can be
       far more than 2^-22 |m| (the fuzzer's row of subnormal x: dgamma 0.2 % off). */
    const double lim = 0x1p-22 * fabs((double)m) + 0x1p-149;
    return d > lim ? lim : d < -lim ? -lim : d;
}

/* a + b = hi + lo exactly (Knuth's two-sum; any magnitudes, no branch), for floats or GCC
   vectors of floats (a four-row group's lanes); a and b are read more than once. */
#define LN_TWO_SUM(a, b, hi, lo)                                                            \
    do {                                                                                    \
        const __typeof__((a) + (b)) s_ = (a) + (b), bb_ = s_ - (a);                         \
        (lo) = ((a) - (s_ - bb_)) + ((b) - bb_);                                            \
        (hi) = s_;                                                                          \
    } while (0)
static inline void ln_two_sum(float a, float b, float *hi, float *lo)
{
    LN_TWO_SUM(a, b, *hi, *lo);
}

#endif /* LN_KERNELS_PLAN_H */
