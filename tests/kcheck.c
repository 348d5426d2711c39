/* kcheck.c - helpers shared by the per-ISA kernel suites. */
#include "kcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

const ln_kernels *kc_kernel_from_args(int argc, char **argv)
{
    if (argc < 2 || tu_isa_from_name(argv[1]) < 0) {
        fprintf(stderr, "usage: %s scalar|avx2|avx512|neon|sve\n", argv[0]);
        exit(2);
    }
    const ln_kernels *k = ln_kernels_get(tu_isa_from_name(argv[1]));
    if (!k) {
        fprintf(stderr, "SKIPPED: the %s kernel is not compiled in or this CPU lacks it\n",
                argv[1]);
        exit(TU_SKIP);
    }
    return k;
}

int kc_quick(void)
{
    const char *q = getenv("LN_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

void kc_forward(const ln_kernels *k, const float *x, const float *gamma, const float *beta,
                float *y, float *mean, float *rstd, size_t rows, size_t cols, float eps)
{
    const ln_fwd_args a = {.x = x, .ldx = cols, .gamma = gamma, .beta = beta, .y = y, .ldy = cols,
                           .mean = mean, .rstd = rstd, .cols = cols, .eps = eps};
    k->forward(&a, 0, rows);
}

void kc_backward(const ln_kernels *k, const float *dy, const float *x, const float *gamma,
                 const float *mean, const float *rstd, float *dx, float *dgamma, float *dbeta,
                 size_t rows, size_t cols)
{
    const ln_bwd_args a = {.dy = dy, .lddy = cols, .x = x, .ldx = cols, .gamma = gamma,
                           .mean = mean, .rstd = rstd, .dx = dx, .lddx = cols, .cols = cols};
    if (ln_backward_run(k, &a, rows, dgamma, dbeta) != LN_OK) {
        fprintf(stderr, "ln_backward_run: out of memory\n");
        abort();
    }
}

double kc_tau(size_t cols) { return cols <= 16384 ? 4e-6 : 1e-5; }

int kc_same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

float *kc_alloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (!p)
        abort();
    return p;
}
