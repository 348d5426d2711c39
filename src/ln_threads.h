/* ln_threads.h - the threading drivers (threads.c) as run.c and the tests see them. */
#ifndef LN_THREADS_H
#define LN_THREADS_H

#include <stdatomic.h>

#include "ln_internal.h"

/*
 * A call of `work` = rows*cols elements gets one thread per `min_work` elements, at most
 * ln_get_num_threads() and at most `units` (rows, or backward's blocks); fewer than two
 * means the caller runs the kernel itself. The defaults were measured (1 vs 2 threads,
 * AVX2, hot): forward gains from ~32K elements per thread, backward (more work per
 * element, but whole 64-row blocks per thread, so two threads can be unbalanced) from ~64K.
 */
#define LN_THREAD_MIN_FWD ((size_t)32768)
#define LN_THREAD_MIN_BWD ((size_t)65536)

extern atomic_int ln_threads_setting; /* ln_get_num_threads(); 0 until first read */
int ln_threads_team_size(size_t work, size_t min_work, size_t units);

/* Inline so that the default, one thread, costs a load and a branch per call. */
static inline int ln_threads_for(size_t work, size_t min_work, size_t units)
{
    if (atomic_load_explicit(&ln_threads_setting, memory_order_relaxed) == 1)
        return 1;
    return ln_threads_team_size(work, min_work, units);
}

void ln_forward_threads(const ln_kernels *k, const ln_fwd_args *a, size_t rows, int t);
/* LN_ERR_NOMEM (nothing written) if the partials of all blocks cannot be allocated. */
int ln_backward_threads(const ln_kernels *k, const ln_bwd_args *a, size_t rows, float *dgamma,
                        float *dbeta, int t);

/* For tests: elements per thread for every call (0: each call's default); returns the
   previous value. */
size_t ln_threads_min_work(size_t min_work);
/* For tests: the size of the last team that ran since the previous query (1: none). */
int ln_threads_last_team(void);

#endif /* LN_THREADS_H */
