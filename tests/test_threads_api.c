/* test_threads_api.c - the thread count as a user of the shared library sees it: setting,
   environment, and calls in a forked child. */
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

#include "layernorm.h"
#include "testutil.h"

static int g_env_expected; /* what LN_NUM_THREADS (set by ctest) must have given */

/* Runs first: the environment is read once, at first use, before any set. */
static void environment_sets_the_start_value(void **state)
{
    (void)state;
    assert_int_equal(ln_get_num_threads(), g_env_expected);
}

static void setting_is_clamped(void **state)
{
    (void)state;
    static const int asked[] = {3, 1, 0, -5, 256, 257, 100000, 2};
    static const int got[] = {3, 1, 1, 1, 256, 256, 256, 2};
    for (size_t i = 0; i < sizeof asked / sizeof *asked; i++) {
        assert_int_equal(ln_set_num_threads(asked[i]), LN_OK);
        assert_int_equal(ln_get_num_threads(), got[i]);
    }
    ln_set_num_threads(1);
}

/* Large enough for two threads under the default threshold, with many backward blocks. */
#define ROWS 512
#define COLS 768
#define N ((size_t)ROWS * COLS)

typedef struct run {
    float y[N], mean[ROWS], rstd[ROWS], dx[N], dgamma[COLS], dbeta[COLS];
} run;

static void compute(const float *x, const float *dy, const float *g, const float *b, run *r)
{
    assert_int_equal(ln_forward_f32(x, g, b, r->y, r->mean, r->rstd, ROWS, COLS, 1e-5f), LN_OK);
    assert_int_equal(
        ln_backward_f32(dy, x, g, r->mean, r->rstd, r->dx, r->dgamma, r->dbeta, ROWS, COLS), LN_OK);
}

/* libgomp hangs a forked child's first parallel region once the parent has a thread
   pool (PyTorch #19163). The child must get its results, the same bits, in time. */
static void forked_child_does_not_hang(void **state)
{
    (void)state;
    tu_rng rng = {19163};
    float *x = malloc(N * sizeof *x), *dy = malloc(N * sizeof *dy);
    float g[COLS], b[COLS];
    run *parent = malloc(sizeof *parent), *child = malloc(sizeof *child);
    assert_non_null(x), assert_non_null(dy), assert_non_null(parent), assert_non_null(child);
    tu_fill_normal(&rng, x, N, 10.0, 2.0);
    tu_fill_normal(&rng, dy, N, 0.0, 1.0);
    tu_fill_normal(&rng, g, COLS, 1.0, 0.5);
    tu_fill_normal(&rng, b, COLS, 0.0, 0.5);

    ln_set_num_threads(2);
    compute(x, dy, g, b, parent);
    /* The premise: the parent's threads exist (libgomp keeps its pool between calls). */
    assert_true(tu_thread_count() >= 2);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        compute(x, dy, g, b, child);
        const int same = memcmp(parent, child, sizeof *parent) == 0;
        free(x), free(dy), free(parent), free(child); /* leak checkers see the child too */
        _exit(same ? 0 : 3);
    }
    int status = 0;
    const int done = tu_wait_timeout(pid, 60.0, &status);
    if (done == 0)
        fail_msg("the forked child hung in a library call (killed after 60 s)");
    assert_int_equal(done, 1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 3: the child's bits differ */
    /* And the parent keeps its threads working after the fork. */
    compute(x, dy, g, b, child);
    assert_memory_equal(parent, child, sizeof *parent);
    ln_set_num_threads(1);
    free(x), free(dy), free(parent), free(child);
}

/* LeakSanitizer: clang's OpenMP runtime (libomp) keeps its per-thread bookkeeping until
   exit on purpose; only allocations made inside libomp are exempt. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libomp.so\n"; }

int main(int argc, char **argv)
{
    g_env_expected = argc > 1 ? atoi(argv[1]) : 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(environment_sets_the_start_value),
        cmocka_unit_test(setting_is_clamped),
        cmocka_unit_test(forked_child_does_not_hang),
    };
    /* "env-only": the runs that exist for one LN_NUM_THREADS value each. */
    const size_t n =
        argc > 2 && strcmp(argv[2], "env-only") == 0 ? 1 : sizeof tests / sizeof *tests;
    return _cmocka_run_group_tests("threads_api", tests, n, NULL, NULL);
}
