/* testutil.h - what every suite shares: a seeded RNG, guard-page buffers, reference math. */
#ifndef LN_TESTUTIL_H
#define LN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* ctest treats this exit code as "skipped" (SKIP_RETURN_CODE), so skips are counted. */
#define TU_SKIP 77
#define TU_EPS32 (1.0 / 16777216.0) /* 2^-24: unit roundoff of float */

typedef struct tu_rng {
    uint64_t s;
} tu_rng;

uint64_t tu_next(tu_rng *r);
double tu_uniform(tu_rng *r); /* [0, 1) */
double tu_normal(tu_rng *r);  /* N(0, 1) */
void tu_fill_normal(tu_rng *r, float *p, size_t n, double mu, double sigma);

/* A buffer of n floats flush against a PROT_NONE page: after its end (at_end != 0) or
   before its start. Any access outside [p, p + n) faults. */
typedef struct tu_guard {
    void *map;
    size_t len;
    float *p;
} tu_guard;
float *tu_guard_alloc(tu_guard *g, size_t n, int at_end);
void tu_guard_free(tu_guard *g);

/* Independent reference: two passes in long double over one row. */
void tu_ref_stats(const float *x, size_t n, float eps, long double *mean, long double *rstd);
void tu_ref_forward_row(const float *x, const float *gamma, const float *beta, size_t n,
                        float eps, long double *y);
/* The exact mean of a row of floats (long double: 64-bit significand, n <= 2^16). */
long double tu_ref_mean(const float *x, size_t n);
/* dx of one row in long double: the saved float rstd (backward's input, which the forward
   rounds) and the row's exact mean, not the saved float mean (the kernels recover its
   rounding from the row); centered == 0: RMSNorm (mean 0, no mean(g) term). */
void tu_ref_backward_row(const float *dy, const float *x, const float *gamma, int centered,
                         float rstd, size_t n, long double *dx);

/* ISA id from "scalar", "avx2", ...; -1 if none. */
int tu_isa_from_name(const char *name);

/* Fill with a recognizable bit pattern, then check that it is still there. */
void tu_sentinel_fill(float *p, size_t n);
int tu_sentinel_intact(const float *p, size_t n);

/* Threads of this process now (entries of /proc/self/task), -1 if unreadable. */
int tu_thread_count(void);

/* Waits up to `seconds` for process pid (status as waitpid gives it); kills it if it is
   still running then. 1: it ended, 0: it was killed, -1: waitpid failed. */
int tu_wait_timeout(int pid, double seconds, int *status);

#endif
