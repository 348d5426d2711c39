/* test_fork.c - a forked child's threaded calls finish, whatever ran OpenMP before the fork. */
#define _POSIX_C_SOURCE 200809L /* fork, alarm under -std=c11 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <omp.h>

#include "layernorm.h"
#include "testutil.h"

/*
 * One order per process (argv[1]), since what ran before the fork cannot be undone:
 *   host     the host runs its own OpenMP region first (PyTorch, an OpenMP BLAS), so the
 *            runtime's thread pool exists though the library never started a team;
 *   library  the library's own threaded call starts the team;
 *   none     no OpenMP region at all before the fork.
 * Then ln_set_num_threads(2), fork(), and in the child a forward and a backward large
 * enough for two threads. Built against the same OpenMP runtime as the library (libgomp
 * with gcc, libomp with clang), as a host process would be.
 */
#define ROWS 512
#define COLS 1024
#define N ((size_t)ROWS * COLS)
/* The child's calls take well under a second even under sanitizers or valgrind; a hang
   is what libgomp's dead pool gives, and SIGALRM ends it. */
#define CHILD_SECONDS 120

typedef struct run {
    float y[N], mean[ROWS], rstd[ROWS], dx[N], dgamma[COLS], dbeta[COLS];
} run;

static const char *g_order;

static int compute(const float *x, const float *dy, run *r)
{
    int st = ln_forward_f32(x, NULL, NULL, r->y, r->mean, r->rstd, ROWS, COLS, 1e-5f);
    if (st == LN_OK)
        st = ln_backward_f32(dy, x, NULL, r->mean, r->rstd, r->dx, r->dgamma, r->dbeta, ROWS,
                             COLS);
    return st;
}

/* The host's own parallel region. Only the master (this thread) writes what is read
   after it: libgomp is not TSan-instrumented, so the join would look like a race. */
static void host_region(void)
{
    int team = 0;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 0)
        team = omp_get_num_threads();
    assert_int_equal(team, 2);
}

/* Child exit codes, so the parent can say what went wrong. */
enum { CHILD_OK, CHILD_STATUS = 3, CHILD_BITS, CHILD_THREADS, CHILD_SETTING };

static int child(const float *x, const float *dy, const run *want, run *got)
{
    alarm(CHILD_SECONDS);
    /* Counted, not assumed 1: an emulator (qemu-user) may run threads of its own. */
    const int before = tu_thread_count();
    if (compute(x, dy, got) != LN_OK)
        return CHILD_STATUS;
    if (memcmp(want, got, sizeof *got) != 0) /* threads never change the bits */
        return CHILD_BITS;
    /* The promise: the child runs every call on its own thread, starting none. */
    if (tu_thread_count() != before)
        return CHILD_THREADS;
    return ln_get_num_threads() == 2 ? CHILD_OK : CHILD_SETTING;
}

static void forked_child_finishes(void **state)
{
    (void)state;
    tu_rng rng = {5607};
    float *x = malloc(N * sizeof *x), *dy = malloc(N * sizeof *dy);
    run *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    assert_non_null(x), assert_non_null(dy), assert_non_null(want), assert_non_null(got);
    tu_fill_normal(&rng, x, N, 3.0, 2.0);
    tu_fill_normal(&rng, dy, N, 0.0, 1.0);
    const int at_start = tu_thread_count();

    if (strcmp(g_order, "host") == 0)
        host_region();
    ln_set_num_threads(1); /* the reference: one thread, no team */
    assert_int_equal(compute(x, dy, want), LN_OK);
    ln_set_num_threads(2);
    if (strcmp(g_order, "library") == 0) {
        assert_int_equal(compute(x, dy, got), LN_OK);
        assert_memory_equal(want, got, sizeof *got);
    }
    /* The premise of "host" and "library": the runtime's pool exists in the parent
       (libgomp keeps it between regions); with "none" no thread has started. */
    if (strcmp(g_order, "none") != 0)
        assert_true(tu_thread_count() > at_start);
    else
        assert_int_equal(tu_thread_count(), at_start);

    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int rc = child(x, dy, want, got);
        free(x), free(dy), free(want), free(got); /* leak checkers see the child too */
        _exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        fail_msg("order %s: the forked child hung in a library call (%d s)", g_order,
                 CHILD_SECONDS);
    if (!WIFEXITED(status))
        fail_msg("order %s: the child died of signal %d", g_order, WTERMSIG(status));
    if (WEXITSTATUS(status) != CHILD_OK)
        fail_msg("order %s: child exit %d (3 status, 4 bits, 5 threads started, 6 setting)",
                 g_order, WEXITSTATUS(status));
    /* The parent keeps its threads: a call after the fork still gives the same bits. */
    assert_int_equal(compute(x, dy, got), LN_OK);
    assert_memory_equal(want, got, sizeof *got);
    ln_set_num_threads(1);
    free(x), free(dy), free(want), free(got);
}

/* LeakSanitizer: libomp keeps its per-thread bookkeeping until exit on purpose. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libomp.so\n"; }

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "host") && strcmp(argv[1], "library") &&
                     strcmp(argv[1], "none"))) {
        fprintf(stderr, "usage: %s host|library|none\n", argv[0]);
        return 2;
    }
    g_order = argv[1];
    const struct CMUnitTest tests[] = {cmocka_unit_test(forked_child_finishes)};
    return _cmocka_run_group_tests(g_order, tests, 1, NULL, NULL);
}
