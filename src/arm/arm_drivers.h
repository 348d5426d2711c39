/* arm_drivers.h - the per-call loops over rows, shared by neon.c and sve.c (a template). */
/*
 * Included once, at the end of an Arm kernel file, after that file has defined
 *   stat_blocks(n)                             the row's number of Welford blocks
 *   row_stats(x, n, eps, tab0, &mean, &rstd)   the row's Welford statistics
 *   apply_row(x, g, b, y, n, mean, rstd, hg, hb)          always_inline
 *   bwd_row(dy, x, g, dx, dgp, dbp, n, mean, rstd, hg, wdx, wdg, wdb)   always_inline
 * The flags are compile-time constants at each call below, so every combination of
 * NULL / non-NULL operands gets its own loop without a branch per element.
 */
#ifndef LN_ARM_DRIVERS_H
#define LN_ARM_DRIVERS_H

#include <string.h>

static void ln_arm_forward(const ln_fwd_args *a, size_t r0, size_t r1)
{
    float tab0[LN_ARM_RTAB];
    ln_arm_fill_recip(tab0, 1, stat_blocks(a->cols));
    const int mode = (a->gamma != NULL) | (a->beta != NULL) << 1;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * a->ldx;
        float *y = a->y + r * a->ldy;
        float mean, rstd;
        row_stats(x, a->cols, a->eps, tab0, &mean, &rstd);
        switch (mode) {
        case 0: apply_row(x, NULL, NULL, y, a->cols, mean, rstd, 0, 0); break;
        case 1: apply_row(x, a->gamma, NULL, y, a->cols, mean, rstd, 1, 0); break;
        case 2: apply_row(x, NULL, a->beta, y, a->cols, mean, rstd, 0, 1); break;
        default: apply_row(x, a->gamma, a->beta, y, a->cols, mean, rstd, 1, 1); break;
        }
        ln_arm_store_stats(a->mean, a->rstd, r, mean, rstd);
    }
}

/* Every (gamma, dx, dgamma, dbeta) combination as its own specialized loop. */
#define LN_BWD_CASE(m)                                                                       \
    case m:                                                                                  \
        bwd_row(dy, x, a->gamma, dx, dg, db, n, a->mean[r], a->rstd[r], (m)&1, (m) >> 1 & 1, \
                (m) >> 2 & 1, (m) >> 3 & 1);                                                 \
        break;

static void ln_arm_backward(const ln_bwd_args *a, size_t r0, size_t r1, float *dg, float *db)
{
    const size_t n = a->cols;
    if (dg)
        memset(dg, 0, n * sizeof *dg); /* +0.0f: an all-zero sum stays +0 */
    if (db)
        memset(db, 0, n * sizeof *db);
    const unsigned mode = (a->gamma != NULL) | (a->dx != NULL) << 1 | (dg != NULL) << 2 |
                          (unsigned)(db != NULL) << 3;
    if (mode <= 1)
        return; /* no output asked for: nothing to read either */
    for (size_t r = r0; r < r1; r++) {
        const float *dy = a->dy + r * a->lddy, *x = a->x + r * a->ldx;
        float *dx = a->dx ? a->dx + r * a->lddx : NULL;
        switch (mode) {
            LN_BWD_CASE(0) LN_BWD_CASE(1) LN_BWD_CASE(2) LN_BWD_CASE(3)
            LN_BWD_CASE(4) LN_BWD_CASE(5) LN_BWD_CASE(6) LN_BWD_CASE(7)
            LN_BWD_CASE(8) LN_BWD_CASE(9) LN_BWD_CASE(10) LN_BWD_CASE(11)
            LN_BWD_CASE(12) LN_BWD_CASE(13) LN_BWD_CASE(14) LN_BWD_CASE(15)
        }
    }
}

#endif /* LN_ARM_DRIVERS_H */
