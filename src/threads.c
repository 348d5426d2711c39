/* threads.c - opt-in OpenMP splitting of rows, blocks and elements, bitwise as one thread. */
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ln_threads.h"

/* libgomp exits the process when it cannot create a thread, so the team size is capped
   well below what a 64-bit process can create with default stacks. */
#define LN_THREADS_CAP 256

/*
 * libgomp is not built with ThreadSanitizer, so TSan sees none of the happens-before
 * edges of its fork, barrier and join, and reports the master reading what the team
 * wrote as races. Under TSan these annotations state exactly those edges and no others;
 * a race between two threads of one team is still reported. No-ops otherwise.
 */
#if defined(__SANITIZE_THREAD__)
#define LN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LN_TSAN 1
#endif
#endif
#if defined(LN_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define EDGE_FROM(p) __tsan_release(p)
#define EDGE_TO(p) __tsan_acquire(p)
#else
#define EDGE_FROM(p) ((void)(p))
#define EDGE_TO(p) ((void)(p))
#endif

/* The sync points of one parallel region, each a distinct address for TSan. */
typedef struct edges {
    char fork, barrier, join;
} edges;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
atomic_int ln_threads_setting;        /* the setting; 0 until init_once has run */
static atomic_int g_no_teams;         /* a forked child, or no fork guard */
static _Atomic size_t g_min_override; /* tests: elements per thread, 0: the caller's */
static atomic_int g_last_team = 1;

static int clamp_threads(long n)
{
    return n < 1 ? 1 : n > LN_THREADS_CAP ? LN_THREADS_CAP : (int)n;
}

/* An OpenMP runtime is not fork-safe: libgomp's child inherits the parent's thread pool
   without its threads, and its first parallel region waits for them forever (PyTorch
   #19163). The pool may be the host's, started by its own parallel regions before any
   call here, so the library cannot know whether it exists: every forked child runs every
   call on its own thread. */
static void child_after_fork(void) { atomic_store_explicit(&g_no_teams, 1, memory_order_relaxed); }

/* Registered when the library is loaded, before the host can fork: a handler registered
   at first use would miss a fork that happens before it. Without the handler a child
   could hang, so then threads are never used. */
__attribute__((constructor)) static void register_fork_guard(void)
{
    if (pthread_atfork(NULL, NULL, child_after_fork) != 0)
        atomic_store(&g_no_teams, 1);
}

static void init_once(void)
{
    int n = 1;
    const char *env = getenv("LN_NUM_THREADS");
    if (env && *env) {
        char *end;
        const long v = strtol(env, &end, 10);
        if (*end == '\0')
            n = clamp_threads(v);
    }
    int expected = 0;
    atomic_compare_exchange_strong(&ln_threads_setting, &expected, n);
}

static int setting(void)
{
    const int n = atomic_load_explicit(&ln_threads_setting, memory_order_relaxed);
    if (n)
        return n;
    pthread_once(&g_once, init_once);
    return atomic_load_explicit(&ln_threads_setting, memory_order_relaxed);
}

LN_API int ln_get_num_threads(void) { return setting(); }

LN_API int ln_set_num_threads(int n)
{
    pthread_once(&g_once, init_once);
    atomic_store_explicit(&ln_threads_setting, clamp_threads(n), memory_order_relaxed);
    return LN_OK;
}

int ln_threads_team_size(size_t work, size_t min_work, size_t units)
{
    const int n = setting();
    if (n == 1 || atomic_load_explicit(&g_no_teams, memory_order_relaxed))
        return 1;
    const size_t over = atomic_load_explicit(&g_min_override, memory_order_relaxed);
    size_t t = work / (over ? over : min_work);
    if (t > units)
        t = units;
    if (t > (size_t)n)
        t = (size_t)n;
    return t < 2 ? 1 : (int)t;
}

size_t ln_threads_min_work(size_t min_work) { return atomic_exchange(&g_min_override, min_work); }

int ln_threads_last_team(void) { return atomic_exchange(&g_last_team, 1); }

/* Thread i of nt takes [*lo, *hi) of n units: contiguous, sizes differing by at most one. */
static void share(size_t n, size_t i, size_t nt, size_t *lo, size_t *hi)
{
    const size_t base = n / nt, extra = n % nt;
    *lo = i * base + (i < extra ? i : extra);
    *hi = *lo + base + (i < extra);
}

/* One parallel call: what every member of the team reads, set before the team starts. */
typedef struct team {
    ln_range_fn range; /* ranges: fn over [0, n) in units of grain */
    ln_block_fn block; /* blocks: rows, cols, blocks */
    const void *ctx;
    size_t n, grain;
    size_t rows, cols, blocks;
    int accumulate;
    float *dgamma, *dbeta, *part; /* part: 2 ln_part_stride(cols) floats per block, NULL:
                                     no partials */
    double *acc;                  /* 2 * cols */
    void *mem;                    /* what holds part and acc */
    edges e;
} team;

/* The compiler passes `tm` to the team through a stack slot that libgomp hands over
   unseen by TSan; that hand-off is the only code left uninstrumented. */
#if defined(LN_TSAN)
#define HANDOFF __attribute__((no_sanitize_thread, noinline))
#else
#define HANDOFF
#endif

static void ranges_member(team *tm)
{
    EDGE_TO(&tm->e.fork);
    const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    const size_t units = tm->n / tm->grain + (tm->n % tm->grain != 0);
    size_t u0, u1;
    share(units, i, nt, &u0, &u1);
    const size_t i0 = u0 * tm->grain, i1 = u1 == units ? tm->n : u1 * tm->grain;
    if (i0 < i1)
        tm->range(tm->ctx, i0, i1);
    if (i == 0)
        atomic_store_explicit(&g_last_team, (int)nt, memory_order_relaxed);
    EDGE_FROM(&tm->e.join);
}

HANDOFF static void ranges_team(team *tm, int t)
{
#pragma omp parallel num_threads(t)
    ranges_member(tm);
}

void ln_threads_ranges(ln_range_fn fn, const void *ctx, size_t n, size_t grain, int t)
{
    team tm = {.range = fn, .ctx = ctx, .n = n, .grain = grain};
    EDGE_FROM(&tm.e.fork);
    ranges_team(&tm, t);
    EDGE_TO(&tm.e.join);
}

/* out[j0..j1) = the sum over blocks of their partial `which` (0 dgamma, 1 dbeta) in
   block order in double, plus out's own value last when accumulating:
   ln_backward_run's additions, in its order. */
static void fold(const team *tm, size_t which, size_t j0, size_t j1, float *out)
{
    const size_t ps = ln_part_stride(tm->cols);
    double *acc = tm->acc + which * tm->cols;
    const float *part = tm->part + which * ps;
    for (size_t j = j0; j < j1; j++)
        acc[j] = 0.0;
    for (size_t b = 0; b < tm->blocks; b++)
        for (size_t j = j0; j < j1; j++)
            acc[j] += (double)part[b * 2 * ps + j];
    for (size_t j = j0; j < j1; j++)
        out[j] = (float)(acc[j] + (tm->accumulate ? (double)out[j] : 0.0));
}

/* Whole blocks of LN_BWD_BLOCK rows per thread, each block's partials kept; after a
   barrier each thread folds a range of columns over all blocks. */
static void blocks_member(team *tm)
{
    EDGE_TO(&tm->e.fork);
    const size_t i = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    const size_t n = tm->cols, nb = tm->blocks, rows = tm->rows, ps = ln_part_stride(n);
    size_t b0, b1;
    share(nb, i, nt, &b0, &b1);
    if (!tm->part && b0 < b1) /* no partials: the blocks need not be cut */
        tm->block(tm->ctx, b0 * LN_BWD_BLOCK, b1 == nb ? rows : b1 * LN_BWD_BLOCK, NULL, NULL);
    for (size_t b = b0; tm->part && b < b1; b++) {
        const size_t r0 = b * LN_BWD_BLOCK, r1 = b + 1 == nb ? rows : r0 + LN_BWD_BLOCK;
        float *p = tm->part + b * 2 * ps;
        tm->block(tm->ctx, r0, r1, tm->dgamma ? p : NULL, tm->dbeta ? p + ps : NULL);
    }
    ln_stream_fence(); /* this member's streamed dx, before the team joins (ln_bwd_fn) */
    if (tm->part) {
        EDGE_FROM(&tm->e.barrier);
#pragma omp barrier
        EDGE_TO(&tm->e.barrier);
        size_t j0, j1;
        share(n, i, nt, &j0, &j1);
        if (tm->dgamma)
            fold(tm, 0, j0, j1, tm->dgamma);
        if (tm->dbeta)
            fold(tm, 1, j0, j1, tm->dbeta);
    }
    if (i == 0)
        atomic_store_explicit(&g_last_team, (int)nt, memory_order_relaxed);
    EDGE_FROM(&tm->e.join);
}

HANDOFF static void blocks_team(team *tm, int t)
{
#pragma omp parallel num_threads(t)
    blocks_member(tm);
}

int ln_threads_blocks(ln_block_fn block, const void *ctx, size_t rows, size_t cols,
                      int accumulate, float *dgamma, float *dbeta, int t)
{
    const size_t n = cols, nb = rows / LN_BWD_BLOCK + (rows % LN_BWD_BLOCK != 0);
    team tm = {.block = block, .ctx = ctx, .rows = rows, .cols = cols, .blocks = nb,
               .accumulate = accumulate, .dgamma = dgamma, .dbeta = dbeta};
    if (dgamma || dbeta) {
        const size_t ps = ln_part_stride(n);
        tm.mem = malloc(nb * 2 * ps * sizeof(float) + 2 * n * sizeof(double) + LN_PART_SLACK);
        if (!tm.mem)
            return LN_ERR_NOMEM;
        tm.part = ln_part_base(tm.mem);
        tm.acc = (double *)(tm.part + nb * 2 * ps);
    }
    EDGE_FROM(&tm.e.fork);
    blocks_team(&tm, t);
    EDGE_TO(&tm.e.join);
    free(tm.mem);
    return LN_OK;
}
