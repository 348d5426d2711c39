/* arm_drivers.h - the per-call loops over rows of the SVE f32 kernels (a template). */
/*
 * Included once, at the end of an Arm kernel file, after that file has defined
 *   ln_arm_plan, plan_init(&plan, n)   what the call's rows share
 *   row_stats(x, res, sum, n, eps, &plan, &mean, &dmean, &rstd, rms, hres, hsum)
 *                       one pass: Welford (or the mean square), s = x + res stored to sum;
 *                       the mean as mean + dmean (its float value and remainder)
 *   apply_row(src, res, g, b, y, n, mean, dmean, rstd, hg, hb, hadd)
 *   bwd_row(dy, x, g, dx, dgp, dbp, n, mean, rstd, centered, hg, wdx, wdg, wdb, wacc, nt)
 *                       0 when the row needs the double rescue (nothing written then)
 * all always_inline. The flags are compile-time constants at each call below, so every
 * combination of NULL / non-NULL operands and flags gets its own loop, with no branch
 * per element.
 */
#ifndef LN_ARM_DRIVERS_H
#define LN_ARM_DRIVERS_H

#include <string.h>

#include "kernels/tiny_backward.h"

/* Statistics modes: bit 0 RMSNorm, bit 1 a residual is added, bit 2 the sum is stored. */
#define LN_STATS_CASE(m)                                                                  \
    case m:                                                                               \
        row_stats(x, res, sum, n, a->eps, &plan, &mean, &dmean, &rstd, (m)&1, (m) >> 1 & 1, \
                  (m) >> 2 & 1);                                                          \
        break;
/* Apply modes: bit 0 gamma, bit 1 beta, bit 2 the residual is added again (not stored). */
#define LN_APPLY_CASE(m)                                                                  \
    case m:                                                                               \
        apply_row(src, res, a->gamma, a->beta, y, n, mean, dmean, rstd, (m)&1, (m) >> 1 & 1, \
                  (m) >> 2 & 1);                                                          \
        break;

static void ln_arm_forward(const ln_fwd_args *a, size_t r0, size_t r1)
{
    const size_t n = a->cols;
    const int rms = (a->flags & LN_FLAG_RMS_NORM) != 0, hres = a->residual != NULL;
    const int hsum = hres && a->sum != NULL;
    ln_arm_plan plan;
    if (!rms)
        plan_init(&plan, n);
    const unsigned smode = (unsigned)rms | (unsigned)hres << 1 | (unsigned)hsum << 2;
    const unsigned amode = (a->gamma != NULL) | (a->beta != NULL) << 1 |
                           (unsigned)(hres && !hsum) << 2;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->ldx;
        const float *res = hres ? a->residual + r * a->ldx : NULL;
        float *sum = hsum ? a->sum + r * a->ldx : NULL;
        float *y = a->y + r * a->ldy;
        float mean, dmean, rstd;
        switch (smode) {
            LN_STATS_CASE(0) LN_STATS_CASE(1) LN_STATS_CASE(2) LN_STATS_CASE(3)
            LN_STATS_CASE(6) default: LN_STATS_CASE(7) /* the only modes there are */
        }
        /* The stored sum is read back: sum may be the residual, overwritten above. */
        const float *src = hsum ? sum : x;
        switch (amode) {
            LN_APPLY_CASE(0) LN_APPLY_CASE(1) LN_APPLY_CASE(2) LN_APPLY_CASE(3)
            LN_APPLY_CASE(4) LN_APPLY_CASE(5) LN_APPLY_CASE(6) LN_APPLY_CASE(7)
        }
        ln_arm_store_stats(a->mean, a->rstd, r, mean, rstd);
    }
}

/* Backward modes: bit 0 gamma, 1 dx, 2 dgamma, 3 dbeta, 4 dx accumulates (only with dx). */
#define LN_BWD_CASE(m)                                                                    \
    case m:                                                                               \
        ok = bwd_row(dy, x, a->gamma, dx, dg, db, n, mean, a->rstd[r], centered, (m)&1,    \
                     (m) >> 1 & 1, (m) >> 2 & 1, (m) >> 3 & 1, (m) >> 4 & 1, nt);         \
        break;

static void ln_arm_backward(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    const size_t n = a->cols;
    if (dg)
        memset(dg, 0, n * sizeof *dg); /* +0.0f: an all-zero sum stays +0 */
    if (db)
        memset(db, 0, n * sizeof *db);
    const int centered = !(a->flags & LN_FLAG_RMS_NORM);
    const int acc = a->dx && (a->flags & LN_FLAG_ACCUMULATE);
    const unsigned mode = (a->gamma != NULL) | (a->dx != NULL) << 1 | (dg != NULL) << 2 |
                          (unsigned)(db != NULL) << 3 | (unsigned)acc << 4;
    if (mode <= 1)
        return; /* no output asked for: nothing to read either */
    if (n < LN_TINY_COLS) { /* the shared double-precision rows (kernels/tiny_backward.h) */
        ln_backward_tiny(a, r0, r1, dg, db);
        ln_fold_partials(a, dg, db);
        return;
    }
    const int nt = a->nt != 0;
    for (size_t r = r0; r < r1; r++) {
        const float *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
        float *dx = a->dx ? a->dx + r * a->lddx : NULL;
        const float mean = centered ? a->mean[r] : 0.0f; /* RMSNorm: mean is not read */
        int ok = 1;
        switch (mode) {
            LN_BWD_CASE(2) LN_BWD_CASE(3) LN_BWD_CASE(4) LN_BWD_CASE(5)
            LN_BWD_CASE(6) LN_BWD_CASE(7) LN_BWD_CASE(8) LN_BWD_CASE(9)
            LN_BWD_CASE(10) LN_BWD_CASE(11) LN_BWD_CASE(12) LN_BWD_CASE(13)
            LN_BWD_CASE(14) LN_BWD_CASE(15) LN_BWD_CASE(18) LN_BWD_CASE(19)
            LN_BWD_CASE(22) LN_BWD_CASE(23) LN_BWD_CASE(26) LN_BWD_CASE(27)
            LN_BWD_CASE(30) LN_BWD_CASE(31)
        }
        if (!ok) /* finite values beyond the float path's range: every float in double */
            ln_backward_row_double(a, r, dg, db, 0);
    }
    ln_fold_partials(a, dg, db); /* an accumulating call's dgamma/dbeta (args.acc_dg) */
}

#endif /* LN_ARM_DRIVERS_H */
