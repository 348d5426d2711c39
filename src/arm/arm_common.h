/* arm_common.h - what the SVE kernels share: the Welford step reciprocals, the stats store. */
#ifndef LN_ARM_COMMON_H
#define LN_ARM_COMMON_H

#include <arm_neon.h>
#include <stddef.h>

/*
 * Welford's mean update needs 1/t for the t-th step. Every lane of every accumulator takes
 * its t-th step together, so 1/t is one broadcast scalar per block. Divisions are not
 * pipelined (a scalar fdiv per block would cap the loop), so reciprocals come from a table
 * filled four at a time with one vector divide, LN_ARM_RTAB steps per fill. All rows of a
 * call have the same length, so the first table is filled once per call, as far as needed.
 */
#define LN_ARM_RTAB 128

/* tab[k] = 1 / (first + k) for k < min(count, LN_ARM_RTAB) rounded up to 4: correctly
   rounded, like the scalar 1.0f / t. */
static inline void ln_arm_fill_recip(float *tab, size_t first, size_t count)
{
    const float32x4_t one = vdupq_n_f32(1.0f), step = vdupq_n_f32(4.0f);
    const float b = (float)first;
    float32x4_t t = {b, b + 1.0f, b + 2.0f, b + 3.0f};
    for (size_t k = 0; k < count && k < LN_ARM_RTAB; k += 4) {
        vst1q_f32(tab + k, vdivq_f32(one, t));
        t = vaddq_f32(t, step);
    }
}

/* The reciprocals of blocks b0 + 1 .. b0 + *len (*len <= LN_ARM_RTAB, up to block nb): the
   call's shared first table, or the row's own table refilled for later chunks. */
static inline const float *ln_arm_recip_chunk(const float *tab0, float *tab, size_t b0,
                                              size_t nb, size_t *len)
{
    *len = nb - b0 < LN_ARM_RTAB ? nb - b0 : LN_ARM_RTAB;
    if (!b0)
        return tab0;
    ln_arm_fill_recip(tab, b0 + 1, *len);
    return tab;
}

/* The saved statistics go out only where the caller asked for them. */
static inline void ln_arm_store_stats(float *mean_out, float *rstd_out, size_t r, float mean,
                                      float rstd)
{
    if (mean_out)
        mean_out[r] = mean;
    if (rstd_out)
        rstd_out[r] = rstd;
}

#endif /* LN_ARM_COMMON_H */
