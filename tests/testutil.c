/* testutil.c - shared test helpers: RNG, guard pages, long-double reference LayerNorm. */
#define _DEFAULT_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "layernorm.h"

uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tu_uniform(tu_rng *r) { return (double)(tu_next(r) >> 11) * 0x1.0p-53; }

double tu_normal(tu_rng *r)
{
    const double u = 1.0 - tu_uniform(r), v = tu_uniform(r); /* u in (0, 1] */
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void tu_fill_normal(tu_rng *r, float *p, size_t n, double mu, double sigma)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(mu + sigma * tu_normal(r));
}

float *tu_guard_alloc(tu_guard *g, size_t n, int at_end)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t data = (n * sizeof(float) + page - 1) / page * page;
    g->len = data + page;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) {
        g->map = NULL;
        return NULL;
    }
    char *base = g->map;
    if (at_end) {
        mprotect(base + data, page, PROT_NONE);
        g->p = (float *)(base + data) - n;
    } else {
        mprotect(base, page, PROT_NONE);
        g->p = (float *)(base + page);
    }
    return g->p;
}

void tu_guard_free(tu_guard *g)
{
    if (g->map)
        munmap(g->map, g->len);
    g->map = NULL;
}

void tu_ref_stats(const float *x, size_t n, float eps, long double *mean, long double *rstd)
{
    long double s = 0.0L, v = 0.0L;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    const long double m = s / (long double)n;
    for (size_t i = 0; i < n; i++)
        v += ((long double)x[i] - m) * ((long double)x[i] - m);
    *mean = m;
    *rstd = 1.0L / sqrtl(v / (long double)n + (long double)eps);
}

void tu_ref_forward_row(const float *x, const float *gamma, const float *beta, size_t n,
                        float eps, long double *y)
{
    long double m, rs;
    tu_ref_stats(x, n, eps, &m, &rs);
    for (size_t i = 0; i < n; i++)
        y[i] = ((long double)x[i] - m) * rs * (gamma ? gamma[i] : 1.0L) + (beta ? beta[i] : 0.0L);
}

long double tu_ref_mean(const float *x, size_t n)
{
    long double s = 0.0L;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / n;
}

void tu_ref_backward_row(const float *dy, const float *x, const float *gamma, int centered,
                         float rstd, size_t n, long double *dx)
{
    const long double mean = centered ? tu_ref_mean(x, n) : 0.0L;
    long double sg = 0.0L, sgx = 0.0L;
    for (size_t i = 0; i < n; i++) {
        const long double g = (long double)dy[i] * (gamma ? gamma[i] : 1.0L);
        sg += g;
        sgx += g * ((long double)x[i] - mean) * rstd;
    }
    for (size_t i = 0; i < n; i++) {
        const long double g = (long double)dy[i] * (gamma ? gamma[i] : 1.0L);
        const long double xhat = ((long double)x[i] - mean) * rstd;
        dx[i] = rstd * (g - (centered ? sg / n : 0.0L) - xhat * sgx / n);
    }
}

int tu_isa_from_name(const char *name)
{
    for (int isa = 0; isa <= LN_ISA_SVE; isa++)
        if (strcmp(name, ln_isa_name(isa)) == 0)
            return isa;
    return -1;
}

static const uint32_t k_sentinel = 0x7FC5A5A5u; /* a NaN payload no kernel produces */

void tu_sentinel_fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        memcpy(&p[i], &k_sentinel, sizeof k_sentinel);
}

int tu_sentinel_intact(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&p[i], &k_sentinel, sizeof k_sentinel) != 0)
            return 0;
    return 1;
}

int tu_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int tu_wait_timeout(int pid, double seconds, int *status)
{
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (double waited = 0; waited < seconds; waited += 0.01) {
        const pid_t w = waitpid((pid_t)pid, status, WNOHANG);
        if (w == (pid_t)pid)
            return 1;
        if (w < 0)
            return -1;
        nanosleep(&tick, NULL);
    }
    kill((pid_t)pid, SIGKILL);
    waitpid((pid_t)pid, status, 0);
    return 0;
}
