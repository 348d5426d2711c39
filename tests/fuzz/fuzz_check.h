/* fuzz_check.h - the fuzz target's case: decoded shape and buffers, and the differential check. */
#ifndef LN_FUZZ_CHECK_H
#define LN_FUZZ_CHECK_H

#include <stddef.h>

enum {
    NO_GAMMA = 1, NO_BETA = 2, NO_STATS = 4, NO_DX = 8, NO_DGAMMA = 16, NO_DBETA = 32,
    IN_PLACE = 64, GUARD_BEFORE = 128
};

typedef struct shape {
    size_t rows, cols, ld; /* one stride for every matrix: in place needs ldy == ldx */
    float eps;
    unsigned flags; /* the enum above */
    unsigned cap;   /* ISA cap for the public-API leg */
    unsigned split; /* forward runs as rows [0, split) then [split, rows) */
} shape;

/* Every matrix spans (rows - 1) * ld + cols floats, every vector cols or rows floats,
   each flush against a guard page and sentinel-filled; gamma/beta may be NULL. */
typedef struct fc_case {
    shape s;
    const float *x, *dy, *gamma, *beta;
    float *y_ref, *mean_ref, *rstd_ref, *dx_ref, *dg_ref, *db_ref; /* the oracle's */
    float *y, *mean, *rstd, *dx, *dg, *db;                         /* a kernel's */
    float *y2, *dx2, *dg2, *db2;                                   /* the public API's */
} fc_case;

/* Runs the oracle, every available kernel and the public API; aborts on any mismatch. */
void fc_run(fc_case *c);

#endif
