/* rowkinds.h - the kinds of rows the accuracy contract covers, one generator for every suite. */
#ifndef LN_TEST_ROWKINDS_H
#define LN_TEST_ROWKINDS_H

#include <stddef.h>

#include "testutil.h"

/*
 * Each kind stresses one failure of a float LayerNorm (NUMERICS.md): cancellation of a
 * large mean (offsets), a spread near the float resolution of the mean, a first value far
 * from the rest (the shift), outliers, heavy tails, and the ends of the float range. Truth is always
 * computed from the same float inputs, so only the kernel's arithmetic is measured.
 */
enum {
    TU_ROW_RANDN,         /* N(0, 1) */
    TU_ROW_OFFSET_1E4,    /* N(1e4, 1) */
    TU_ROW_OFFSET_1E6,    /* N(1e6, 1) */
    TU_ROW_OFFSET_1E8,    /* N(-1e8, 4): beyond 1e6, sigma a few float ulps of the mean */
    TU_ROW_TINY_SPREAD,   /* N(1, 1e-4) */
    TU_ROW_CONSTANT,      /* every value 3.25 */
    TU_ROW_OUTLIERS,      /* N(0, 1) with one value in 16 replaced by +-1e3 */
    TU_ROW_FIRST_OUTLIER, /* N(5, 1) with the row's first value 1e4 (the statistics' shift) */
    TU_ROW_SCALE_1E18,    /* N(0, 1e18): squares overflow float */
    TU_ROW_SCALE_1E_30,   /* N(0, 1e-30): squares underflow float */
    TU_ROW_LOGNORMAL,     /* exp(N(0, 4)): a few values hold most of M2, in one lane
                             through every merge of the statistics' tree */
    TU_ROW_NKINDS
};

const char *tu_row_kind_name(int kind);
void tu_fill_row_kind(tu_rng *r, float *p, size_t n, int kind);

#endif
