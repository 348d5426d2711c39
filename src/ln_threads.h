/* ln_threads.h - the threading drivers (threads.c) as run.c and the tests see them. */
#ifndef LN_THREADS_H
#define LN_THREADS_H

#include <stdatomic.h>
#include <stdint.h>

#include "ln_internal.h"

/*
 * A call of `work` elements gets one thread per `min_work` elements, at most
 * ln_get_num_threads() and at most `units` (rows, backward's blocks, GELU's chunks);
 * fewer than two means the caller runs the kernel itself. The f32 defaults were measured
 * (1 vs 2 threads, AVX2, hot): forward gains from ~32K elements per thread, backward
 * (more work per element, but whole 64-row blocks per thread, so two threads can be
 * unbalanced) from ~64K. bf16 and GELU ask for at least the same time per thread as f32
 * forward (~6 us): per element at one thread (AVX-512, hot) bf16 forward costs ~1.6x and
 * backward ~0.7x f32's, GELU ~2.8x f32 forward's.
 */
#define LN_THREAD_MIN_FWD ((size_t)32768)
#define LN_THREAD_MIN_BWD ((size_t)65536)
#define LN_THREAD_MIN_BF16_FWD ((size_t)32768)
#define LN_THREAD_MIN_BF16_BWD ((size_t)65536)
#define LN_THREAD_MIN_GELU ((size_t)16384)

/* GELU's elements are split in chunks of this many: a multiple of every vector width
   (2048-bit SVE included), so every element sits in the same vector lane as with one
   thread and the results never depend on the split. */
#define LN_GELU_CHUNK ((size_t)64)

extern atomic_int ln_threads_setting; /* ln_get_num_threads(); 0 until first read */
int ln_threads_team_size(size_t work, size_t min_work, size_t units);

/* Inline so that the default, one thread, costs a load and a branch per call. */
static inline int ln_threads_for(size_t work, size_t min_work, size_t units)
{
    if (atomic_load_explicit(&ln_threads_setting, memory_order_relaxed) == 1)
        return 1;
    return ln_threads_team_size(work, min_work, units);
}

/*
 * The scratch of dgamma/dbeta partials: every partial vector (cols floats) starts on a
 * 64-byte line, ln_part_stride(cols) floats after the last, from ln_part_base of an
 * allocation LN_PART_SLACK bytes larger than it holds. The kernels load and store each
 * partial once per vector of a row group; from malloc's 16-byte alignment their 64-byte
 * accesses split lines, and a hot backward of 65 rows ran 1.2-1.3x the per-element time
 * of 64 rows, whose partials were the caller's aligned dgamma and dbeta (AVX-512,
 * 768-1600 columns). The runner keeps malloc and calloc (tests stand in for calloc to
 * reach LN_ERR_NOMEM).
 */
#define LN_PART_SLACK 63
static inline size_t ln_part_stride(size_t cols) { return (cols + 15) / 16 * 16; }
static inline float *ln_part_base(void *mem)
{
    return (float *)(((uintptr_t)mem + LN_PART_SLACK) & ~(uintptr_t)LN_PART_SLACK);
}

/* A row range [i0, i1) of a forward, or an element range of an elementwise operation. */
typedef void (*ln_range_fn)(const void *ctx, size_t i0, size_t i1);
/* Backward rows [r0, r1): one block of at most LN_BWD_BLOCK rows whose partials
   (cols floats each, either may be NULL) are overwritten with its sums, or, when both
   partials are NULL, any number of whole blocks. */
typedef void (*ln_block_fn)(const void *ctx, size_t r0, size_t r1, float *dgamma_part,
                            float *dbeta_part);

/* fn over [0, n) on t threads, each taking a contiguous run of whole units of `grain`
   items (the last unit may be short). */
void ln_threads_ranges(ln_range_fn fn, const void *ctx, size_t n, size_t grain, int t);
/* Backward's blocks on t threads, partials folded in block order as on one thread. LN_OK,
   or LN_ERR_NOMEM (nothing written) if the partials of all blocks cannot be allocated. */
int ln_threads_blocks(ln_block_fn block, const void *ctx, size_t rows, size_t cols,
                      int accumulate, float *dgamma, float *dbeta, int t);

/* For tests: elements per thread for every call (0: each call's default); returns the
   previous value. */
size_t ln_threads_min_work(size_t min_work);
/* For tests: the size of the last team that ran since the previous query (1: none). */
int ln_threads_last_team(void);

#endif /* LN_THREADS_H */
