/* rowkinds.c - generators for the accuracy contract's kinds of rows (rowkinds.h). */
#include "rowkinds.h"

#include <math.h>

static const char *const k_names[TU_ROW_NKINDS] = {
    "randn", "offset1e4", "offset1e6", "offset1e8", "tinyspread",
    "constant", "outliers", "firstoutlier", "scale1e18", "scale1e-30", "lognormal"};

const char *tu_row_kind_name(int kind)
{
    return kind >= 0 && kind < TU_ROW_NKINDS ? k_names[kind] : "unknown";
}

void tu_fill_row_kind(tu_rng *r, float *p, size_t n, int kind)
{
    static const double mu[TU_ROW_NKINDS] = {0, 1e4, 1e6, -1e8, 1, 3.25, 0, 5, 0, 0, 0};
    static const double sd[TU_ROW_NKINDS] = {1, 1, 1, 4, 1e-4, 0, 1, 1, 1e18, 1e-30, 2};
    tu_fill_normal(r, p, n, mu[kind], sd[kind]);
    if (kind == TU_ROW_OUTLIERS)
        for (size_t i = 0; i < n; i++)
            if (tu_next(r) % 16 == 0)
                p[i] = tu_next(r) & 1 ? 1e3f : -1e3f;
    if (kind == TU_ROW_FIRST_OUTLIER && n > 1)
        p[0] = 1e4f;
    if (kind == TU_ROW_LOGNORMAL)
        for (size_t i = 0; i < n; i++)
            p[i] = expf(p[i]);
}
