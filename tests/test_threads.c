/* test_threads.c - one ISA's kernels give the same bits on 1..8 threads as on one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kcheck.h"
#include "ln_threads.h"
#include "testutil.h"

#define MAX_THREADS 8

static const ln_kernels *g_k;
static int g_quick; /* LN_TEST_QUICK=1 (emulators): 2, 3 and 8 threads only */

/* Rows below, at and above LN_BWD_BLOCK and not multiples of it, rows < threads, cols
   with and without SIMD tails. Sizes stay small enough for the qemu suites. */
static const struct {
    size_t rows, cols;
} k_shapes[] = {{1, 1},    {1, 768},    {3, 5},    {7, 64},   {63, 33},
                {64, 17},  {65, 100},   {130, 7},  {200, 1},  {257, 768},
                {777, 61}, {129, 1601}, {520, 96}, {9, 4096}, {1100, 24}};
#define N_SHAPES (sizeof k_shapes / sizeof k_shapes[0])

/* Every combination of outputs the drivers treat differently, then the 1.1 options: the
   accumulating backward (its fold adds the caller's value), RMSNorm, the residual add
   (sum written per row) and row strides > cols (the gaps must stay untouched). */
enum {
    ALL,
    DGAMMA_ONLY,
    DBETA_ONLY,
    DX_ONLY,
    GRADS_ONLY,
    ACCUMULATE,
    RMS,
    RESIDUAL,
    STRIDED,
    N_VARIANTS
};

typedef struct problem {
    size_t rows, cols;
    float *x, *gamma, *beta, *dy;
} problem;

/* All outputs of one forward and one backward, in one buffer so one memcmp compares them. */
typedef struct outputs {
    float *buf, *y, *mean, *rstd, *dx, *dgamma, *dbeta, *sum;
    size_t len;
} outputs;

static void problem_init(problem *p, size_t rows, size_t cols, uint64_t seed)
{
    tu_rng rng = {seed};
    p->rows = rows, p->cols = cols;
    p->x = malloc(rows * cols * sizeof(float));
    p->dy = malloc(rows * cols * sizeof(float));
    p->gamma = malloc(cols * sizeof(float));
    p->beta = malloc(cols * sizeof(float));
    assert_non_null(p->x), assert_non_null(p->dy), assert_non_null(p->gamma),
        assert_non_null(p->beta);
    /* An offset mean makes the statistics' rounding depend on every element. */
    tu_fill_normal(&rng, p->x, rows * cols, 100.0, 3.0);
    tu_fill_normal(&rng, p->dy, rows * cols, 0.0, 1.0);
    tu_fill_normal(&rng, p->gamma, cols, 1.0, 0.5);
    tu_fill_normal(&rng, p->beta, cols, 0.0, 0.5);
}

static void problem_free(problem *p) { free(p->x), free(p->dy), free(p->gamma), free(p->beta); }

static void outputs_init(outputs *o, size_t rows, size_t cols)
{
    o->len = 3 * rows * cols + 2 * rows + 2 * cols;
    o->buf = malloc(o->len * sizeof(float));
    assert_non_null(o->buf);
    o->y = o->buf, o->dx = o->y + rows * cols, o->sum = o->dx + rows * cols;
    o->mean = o->sum + rows * cols, o->rstd = o->mean + rows;
    o->dgamma = o->rstd + rows, o->dbeta = o->dgamma + cols;
}

/* Forward, then backward from forward's own mean and rstd. Outputs not asked for keep
   the sentinel, so a driver writing one it should not is caught by the comparison.
   team[0], team[1]: the team sizes forward and backward ran with. */
static void compute(const problem *p, outputs *o, int variant, int team[2])
{
    const size_t rows = p->rows, ld = p->cols;
    /* Strided: the leftmost cols - 3 columns of rows ld apart. */
    const size_t n = variant == STRIDED && ld > 3 ? ld - 3 : ld;
    const unsigned rms = variant == RMS ? LN_FLAG_RMS_NORM : 0;
    tu_sentinel_fill(o->buf, o->len);
    ln_fwd_args fa = {.x = p->x,
                      .ldx = ld,
                      .gamma = p->gamma,
                      .beta = p->beta,
                      .y = o->y,
                      .ldy = ld,
                      .mean = o->mean,
                      .rstd = o->rstd,
                      .cols = n,
                      .eps = 1e-5f,
                      .flags = rms};
    if (variant == RESIDUAL)
        fa.residual = p->dy, fa.sum = o->sum;
    ln_threads_last_team();
    ln_forward_run(g_k, &fa, rows);
    team[0] = ln_threads_last_team();
    float *dx =
        variant == DGAMMA_ONLY || variant == DBETA_ONLY || variant == GRADS_ONLY ? NULL : o->dx;
    float *dg = variant == DX_ONLY || variant == DBETA_ONLY ? NULL : o->dgamma;
    float *db = variant == DX_ONLY || variant == DGAMMA_ONLY ? NULL : o->dbeta;
    if (variant == ACCUMULATE) /* what is accumulated onto: any fixed values */
        for (size_t i = 0; i < rows * ld; i++)
            dx[i] = (float)(i % 7) - 3.0f, dg[i % n] = db[i % n] = 0.25f * (float)(i % 5);
    const ln_bwd_args ba = {.dy = p->dy,
                            .lddy = ld,
                            .x = variant == RESIDUAL ? o->sum : p->x,
                            .ldx = ld,
                            .gamma = p->gamma,
                            .mean = o->mean,
                            .rstd = o->rstd,
                            .dx = dx,
                            .lddx = ld,
                            .cols = n,
                            .flags = rms | (variant == ACCUMULATE ? LN_FLAG_ACCUMULATE : 0)};
    assert_int_equal(ln_backward_run(g_k, &ba, rows, dg, db), LN_OK);
    team[1] = ln_threads_last_team();
}

/* The team size each driver must have used: one thread per unit at most (rows for
   forward, blocks for backward), never more than asked. */
static int expected_team(int threads, size_t units)
{
    return (size_t)threads < units ? threads : (int)units;
}

static void check_shape(size_t rows, size_t cols, int variant, uint64_t seed)
{
    problem p;
    outputs ref, got;
    problem_init(&p, rows, cols, seed);
    outputs_init(&ref, rows, cols), outputs_init(&got, rows, cols);
    int team[2];
    ln_set_num_threads(1);
    compute(&p, &ref, variant, team);
    assert_int_equal(team[0], 1), assert_int_equal(team[1], 1);
    const size_t blocks = (rows + LN_BWD_BLOCK - 1) / LN_BWD_BLOCK;
    static const int all[] = {2, 3, 4, 5, 6, 7, MAX_THREADS}, quick[] = {2, 3, MAX_THREADS};
    const int *counts = g_quick ? quick : all;
    const size_t n_counts = g_quick ? sizeof quick / sizeof *quick : sizeof all / sizeof *all;
    for (size_t c = 0; c < n_counts; c++) {
        const int t = counts[c];
        ln_set_num_threads(t);
        compute(&p, &got, variant, team);
        /* Proof that the threaded drivers ran, not the one-thread path. */
        assert_int_equal(team[0], expected_team(t, rows));
        assert_int_equal(team[1], expected_team(t, blocks));
        if (memcmp(ref.buf, got.buf, ref.len * sizeof(float)) != 0)
            fail_msg("%s: rows %zu cols %zu variant %d: %d threads differ from one", g_k->name,
                     rows, cols, variant, t);
    }
    ln_set_num_threads(1);
    free(ref.buf), free(got.buf);
    problem_free(&p);
}

/* Every shape with every output, on threads for any size (one element per thread). */
static void identical_for_any_thread_count(void **state)
{
    (void)state;
    const size_t old = ln_threads_min_work(1);
    for (size_t s = 0; s < N_SHAPES; s++)
        check_shape(k_shapes[s].rows, k_shapes[s].cols, ALL, 1000 + s);
    ln_threads_min_work(old);
}

/* The other variants take other paths in the drivers (no partials, one of two, the
   accumulating fold) or give the kernels other work per row. */
static void identical_for_every_output_subset(void **state)
{
    (void)state;
    const size_t old = ln_threads_min_work(1);
    for (int v = DGAMMA_ONLY; v < N_VARIANTS; v++) {
        check_shape(257, 33, v, 2000 + (uint64_t)v);
        check_shape(65, 7, v, 3000 + (uint64_t)v);
    }
    ln_threads_min_work(old);
}

/* y == x is allowed; each thread's rows are read before they are overwritten, like one. */
static void in_place_forward(void **state)
{
    (void)state;
    const size_t rows = 300, n = 77, old = ln_threads_min_work(1);
    problem p;
    problem_init(&p, rows, n, 77);
    float *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b);
    assert_non_null(a), assert_non_null(b);
    memcpy(a, p.x, rows * n * sizeof *a);
    memcpy(b, p.x, rows * n * sizeof *b);
    ln_set_num_threads(1);
    const ln_fwd_args one = {.x = a,
                             .ldx = n,
                             .gamma = p.gamma,
                             .beta = p.beta,
                             .y = a,
                             .ldy = n,
                             .cols = n,
                             .eps = 1e-5f};
    ln_forward_run(g_k, &one, rows);
    ln_set_num_threads(5);
    ln_fwd_args five = one;
    five.x = five.y = b;
    ln_forward_run(g_k, &five, rows);
    assert_int_equal(ln_threads_last_team(), 5);
    assert_memory_equal(a, b, rows * n * sizeof *a);
    ln_set_num_threads(1);
    ln_threads_min_work(old);
    free(a), free(b);
    problem_free(&p);
}

/* Host threads calling at once each get their own team (OpenMP teams belong to the
   thread that starts them) and their own bits; under TSan this is the concurrency test. */
typedef struct caller {
    problem p;
    outputs got;
    int team[2];
} caller;

static void *call_once(void *arg)
{
    caller *c = arg;
    compute(&c->p, &c->got, ALL, c->team);
    return NULL;
}

static void concurrent_callers(void **state)
{
    (void)state;
    enum { CALLERS = 3 };
    const size_t old = ln_threads_min_work(1);
    caller c[CALLERS];
    outputs ref[CALLERS];
    int team[2];
    ln_set_num_threads(1);
    for (int i = 0; i < CALLERS; i++) {
        problem_init(&c[i].p, 200 + 37 * (size_t)i, 48, 500 + (uint64_t)i);
        outputs_init(&c[i].got, c[i].p.rows, c[i].p.cols);
        outputs_init(&ref[i], c[i].p.rows, c[i].p.cols);
        compute(&c[i].p, &ref[i], ALL, team);
    }
    ln_set_num_threads(3);
    pthread_t tid[CALLERS];
    for (int i = 0; i < CALLERS; i++)
        assert_int_equal(pthread_create(&tid[i], NULL, call_once, &c[i]), 0);
    for (int i = 0; i < CALLERS; i++)
        assert_int_equal(pthread_join(tid[i], NULL), 0);
    for (int i = 0; i < CALLERS; i++) {
        assert_memory_equal(ref[i].buf, c[i].got.buf, ref[i].len * sizeof(float));
        free(ref[i].buf), free(c[i].got.buf);
        problem_free(&c[i].p);
    }
    ln_set_num_threads(1);
    ln_threads_min_work(old);
}

/* The default thresholds: one thread per LN_THREAD_MIN_FWD (forward) or _BWD elements,
   capped by units and by the setting; one thread whenever the setting is 1. */
static void team_size_rule(void **state)
{
    (void)state;
    ln_threads_min_work(0);
    static const size_t mins[] = {LN_THREAD_MIN_FWD, LN_THREAD_MIN_BWD};
    for (int i = 0; i < 2; i++) {
        const size_t w = mins[i];
        ln_set_num_threads(1);
        assert_int_equal(ln_threads_for(1000 * w, w, 1000), 1);
        ln_set_num_threads(8);
        assert_int_equal(ln_threads_for(2 * w - 1, w, 1000), 1);
        assert_int_equal(ln_threads_for(2 * w, w, 1000), 2);
        assert_int_equal(ln_threads_for(5 * w + w / 2, w, 1000), 5);
        assert_int_equal(ln_threads_for(1000 * w, w, 1000), 8);
        assert_int_equal(ln_threads_for(1000 * w, w, 3), 3);
        assert_int_equal(ln_threads_for(1000 * w, w, 1), 1);
    }
    /* The drivers pass those defaults: just below and at two threads' worth. */
    problem p;
    outputs o;
    int team[2];
    problem_init(&p, 2 * LN_THREAD_MIN_BWD / 64, 64, 5);
    outputs_init(&o, p.rows, p.cols);
    p.rows = 2 * LN_THREAD_MIN_FWD / 64 - 1;
    compute(&p, &o, ALL, team);
    assert_int_equal(team[0], 1), assert_int_equal(team[1], 1);
    p.rows++;
    compute(&p, &o, ALL, team);
    assert_int_equal(team[0], 2), assert_int_equal(team[1], 1);
    p.rows = 2 * LN_THREAD_MIN_BWD / 64 - 1;
    compute(&p, &o, ALL, team);
    assert_int_equal(team[0], 3), assert_int_equal(team[1], 1);
    p.rows++;
    compute(&p, &o, ALL, team);
    assert_int_equal(team[0], 4), assert_int_equal(team[1], 2);
    ln_set_num_threads(1);
    free(o.buf);
    problem_free(&p);
}

/* LeakSanitizer: clang's OpenMP runtime (libomp) keeps its per-thread bookkeeping until
   exit on purpose; only allocations made inside libomp are exempt. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libomp.so\n"; }

int main(int argc, char **argv)
{
    g_k = kc_kernel_from_args(argc, argv);
    g_quick = kc_quick();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_for_any_thread_count),
        cmocka_unit_test(identical_for_every_output_subset),
        cmocka_unit_test(in_place_forward),
        cmocka_unit_test(concurrent_callers),
        cmocka_unit_test(team_size_rule),
    };
    return cmocka_run_group_tests_name(argv[1], tests, NULL, NULL);
}
