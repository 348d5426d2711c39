/* kcheck.h - per-ISA kernel suites: pick the kernel under test, run it and the oracle. */
#ifndef LN_KCHECK_H
#define LN_KCHECK_H

#include <stddef.h>

#include "ln_internal.h"

/* The kernel named by argv[1]; exits with TU_SKIP (a visible ctest skip) when this
   CPU or build cannot run it. */
const ln_kernels *kc_kernel_from_args(int argc, char **argv);

/* LN_TEST_QUICK=1 (emulators) shrinks the largest shapes. */
int kc_quick(void);

/* Contiguous calls straight into a kernel table (no validation). */
void kc_forward(const ln_kernels *k, const float *x, const float *gamma, const float *beta,
                float *y, float *mean, float *rstd, size_t rows, size_t cols, float eps);
void kc_backward(const ln_kernels *k, const float *dy, const float *x, const float *gamma,
                 const float *mean, const float *rstd, float *dx, float *dgamma,
                 float *dbeta, size_t rows, size_t cols);

/* The NUMERICS.md forward bound: tau = 4e-6 up to 16384 columns, 1e-5 beyond. */
double kc_tau(size_t cols);

/* Bitwise equality of float arrays (NaN payloads and signed zeros included). */
int kc_same_bits(const float *a, const float *b, size_t n);

/* A float array from a fresh allocation, aborting the test on failure. */
float *kc_alloc(size_t n);

#endif
