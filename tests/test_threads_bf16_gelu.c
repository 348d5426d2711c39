/* test_threads_bf16_gelu.c - one ISA's bf16 LayerNorm and GELU: the same bits on 1..8 threads. */
#define _POSIX_C_SOURCE 200809L /* fork, kill, nanosleep under -std=c11 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bf16.h"
#include "kcheck.h"
#include "ln_threads.h"
#include "testutil.h"

static const ln_kernels *g_k;
static int g_quick; /* LN_TEST_QUICK=1 (emulators): 2, 3 and 8 threads only */

/* Rows below, at and above LN_BWD_BLOCK and not multiples of it, rows < threads, cols
   with and without SIMD tails; their products give GELU lengths on and off its chunks. */
static const struct {
    size_t rows, cols;
} k_shapes[] = {{1, 1},   {1, 768},  {3, 5},     {7, 64},  {63, 33},  {64, 17},
                {65, 100}, {130, 7}, {200, 1},   {257, 96}, {777, 61}, {9, 4097}};
#define N_SHAPES (sizeof k_shapes / sizeof k_shapes[0])

/* Which outputs backward computes: each takes another path through the block driver. */
enum { ALL, DX_ONLY, GRADS_ONLY, DGAMMA_ONLY, N_VARIANTS };

typedef struct problem {
    size_t rows, cols;
    uint16_t *x, *dy;     /* bf16 */
    float *xf, *dyf;      /* GELU's operands: rows * cols floats */
    float *gamma, *beta;
} problem;

/* Every output in one buffer (bf16 outputs stored two to a float slot) for one memcmp;
   outputs not asked for keep the sentinel. */
typedef struct outputs {
    float *buf, *mean, *rstd, *dgamma, *dbeta, *gy, *gdx, *gio;
    uint16_t *y, *dx;
    size_t len;
} outputs;

static void problem_init(problem *p, size_t rows, size_t cols, uint64_t seed)
{
    tu_rng rng = {seed};
    const size_t n = rows * cols;
    p->rows = rows, p->cols = cols;
    p->x = malloc(n * 2), p->dy = malloc(n * 2);
    p->xf = malloc(n * sizeof(float)), p->dyf = malloc(n * sizeof(float));
    p->gamma = malloc(cols * sizeof(float)), p->beta = malloc(cols * sizeof(float));
    assert_non_null(p->x), assert_non_null(p->dy), assert_non_null(p->xf);
    assert_non_null(p->dyf), assert_non_null(p->gamma), assert_non_null(p->beta);
    /* An offset mean makes the statistics' rounding depend on every element. */
    tu_fill_normal(&rng, p->xf, n, 20.0, 3.0);
    tu_fill_normal(&rng, p->dyf, n, 0.0, 1.0);
    for (size_t i = 0; i < n; i++)
        p->x[i] = ln_f32_to_bf16(p->xf[i]), p->dy[i] = ln_f32_to_bf16(p->dyf[i]);
    tu_fill_normal(&rng, p->xf, n, 0.0, 4.0); /* GELU's own inputs, around its bend */
    tu_fill_normal(&rng, p->gamma, cols, 1.0, 0.5);
    tu_fill_normal(&rng, p->beta, cols, 0.0, 0.5);
}

static void problem_free(problem *p)
{
    free(p->x), free(p->dy), free(p->xf), free(p->dyf), free(p->gamma), free(p->beta);
}

static void outputs_init(outputs *o, size_t rows, size_t cols)
{
    const size_t n = rows * cols, half = (n + 1) / 2;
    o->len = 2 * half + 2 * rows + 2 * cols + 3 * n;
    o->buf = malloc(o->len * sizeof(float));
    assert_non_null(o->buf);
    o->y = (uint16_t *)o->buf, o->dx = (uint16_t *)(o->buf + half);
    o->mean = o->buf + 2 * half, o->rstd = o->mean + rows;
    o->dgamma = o->rstd + rows, o->dbeta = o->dgamma + cols;
    o->gy = o->dbeta + cols, o->gdx = o->gy + n, o->gio = o->gdx + n;
}

/* bf16 forward, backward from its own statistics, then GELU over all rows * cols
   elements: forward (tanh), backward (erf), in-place backward (dx == dy, tanh). team:
   the team sizes of the first four. */
static void compute(const problem *p, outputs *o, int variant, int team[4])
{
    const size_t rows = p->rows, n = p->cols, len = rows * n;
    tu_sentinel_fill(o->buf, o->len);
    const ln_bf16_fwd_args fa = {p->x, n, p->gamma, p->beta, o->y, n, o->mean, o->rstd, n, 1e-5f, 0};
    ln_threads_last_team();
    ln_bf16_forward_run(g_k, &fa, rows);
    team[0] = ln_threads_last_team();
    uint16_t *dx = variant == GRADS_ONLY || variant == DGAMMA_ONLY ? NULL : o->dx;
    float *dg = variant == DX_ONLY ? NULL : o->dgamma;
    float *db = variant == DX_ONLY || variant == DGAMMA_ONLY ? NULL : o->dbeta;
    const ln_bf16_bwd_args ba = {p->dy, n, p->x, n, p->gamma, o->mean, o->rstd, dx, n, n, 0, 0};
    assert_int_equal(ln_bf16_backward_run(g_k, &ba, rows, dg, db), LN_OK);
    team[1] = ln_threads_last_team();
    ln_gelu_forward_run(g_k, p->xf, o->gy, len, LN_GELU_TANH);
    team[2] = ln_threads_last_team();
    ln_gelu_backward_run(g_k, p->dyf, p->xf, o->gdx, len, LN_GELU_ERF);
    team[3] = ln_threads_last_team();
    memcpy(o->gio, p->dyf, len * sizeof(float));
    ln_gelu_backward_run(g_k, o->gio, p->xf, o->gio, len, LN_GELU_TANH);
}

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
    int team[4];
    ln_set_num_threads(1);
    compute(&p, &ref, variant, team);
    for (int i = 0; i < 4; i++)
        assert_int_equal(team[i], 1);
    const size_t blocks = (rows + LN_BWD_BLOCK - 1) / LN_BWD_BLOCK;
    const size_t chunks = (rows * cols + LN_GELU_CHUNK - 1) / LN_GELU_CHUNK;
    static const int all[] = {2, 3, 4, 5, 6, 7, 8}, quick[] = {2, 3, 8};
    const int *counts = g_quick ? quick : all;
    const size_t n_counts = g_quick ? sizeof quick / sizeof *quick : sizeof all / sizeof *all;
    for (size_t c = 0; c < n_counts; c++) {
        const int t = counts[c];
        ln_set_num_threads(t);
        compute(&p, &got, variant, team);
        /* Proof that the threaded drivers ran, not the one-thread path. */
        assert_int_equal(team[0], expected_team(t, rows));
        assert_int_equal(team[1], expected_team(t, blocks));
        assert_int_equal(team[2], expected_team(t, chunks));
        assert_int_equal(team[3], expected_team(t, chunks));
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
    for (int v = DX_ONLY; v < N_VARIANTS; v++)
        check_shape(257, 33, v, 2000 + (uint64_t)v);
    ln_threads_min_work(old);
}

/* The defaults: two threads from twice an operation's minimum work, never below. */
static void default_thresholds(void **state)
{
    (void)state;
    ln_threads_min_work(0);
    ln_set_num_threads(8);
    const size_t cols = 64, n = 2 * LN_THREAD_MIN_GELU, rows = 2 * LN_THREAD_MIN_BF16_FWD / cols;
    problem p;
    outputs o;
    problem_init(&p, rows, cols, 5);
    outputs_init(&o, rows, cols);
    assert_true(n <= rows * cols);
    ln_threads_last_team();
    ln_gelu_forward_run(g_k, p.xf, o.gy, n - 1, LN_GELU_TANH);
    assert_int_equal(ln_threads_last_team(), 1);
    ln_gelu_backward_run(g_k, p.dyf, p.xf, o.gdx, n, LN_GELU_TANH);
    assert_int_equal(ln_threads_last_team(), 2);
    const ln_bf16_fwd_args fa = {p.x, cols, NULL, NULL, o.y, cols, NULL, NULL, cols, 1e-5f, 0};
    ln_bf16_forward_run(g_k, &fa, rows - 1);
    assert_int_equal(ln_threads_last_team(), 1);
    ln_bf16_forward_run(g_k, &fa, rows);
    assert_int_equal(ln_threads_last_team(), 2);
    ln_set_num_threads(1);
    free(o.buf);
    problem_free(&p);
}

/* A child forked from a process whose teams have run gets its results, the same bits, in
   time: libgomp would hang its first parallel region, so the child runs on one thread. */
static void forked_child(void **state)
{
    (void)state;
    const size_t old = ln_threads_min_work(1);
    problem p;
    outputs parent, child;
    int team[4];
    problem_init(&p, 130, 77, 19163);
    outputs_init(&parent, p.rows, p.cols), outputs_init(&child, p.rows, p.cols);
    ln_set_num_threads(3);
    compute(&p, &parent, ALL, team);
    assert_int_equal(team[0], 3); /* the premise: the parent's teams have run */
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        compute(&p, &child, ALL, team);
        const int same = memcmp(parent.buf, child.buf, parent.len * sizeof(float)) == 0;
        free(parent.buf), free(child.buf); /* leak checkers see the child too */
        problem_free(&p);
        _exit(same ? 0 : 3);
    }
    int status = 0;
    const int done = tu_wait_timeout(pid, 60.0, &status);
    if (done == 0)
        fail_msg("the forked child hung in a library call (killed after 60 s)");
    assert_int_equal(done, 1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 3: the child's bits differ */
    compute(&p, &child, ALL, team); /* and the parent's teams still work */
    assert_int_equal(team[0], 3);
    assert_memory_equal(parent.buf, child.buf, parent.len * sizeof(float));
    ln_set_num_threads(1);
    ln_threads_min_work(old);
    free(parent.buf), free(child.buf);
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
        cmocka_unit_test(default_thresholds),
        cmocka_unit_test(forked_child),
    };
    return cmocka_run_group_tests_name(argv[1], tests, NULL, NULL);
}
