/* baselines.h - what our kernels are measured against: the naive seed formula and the stream roofline. */
#ifndef LN_BENCH_BASELINES_H
#define LN_BENCH_BASELINES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The seed formula as a user would first write it (naive.c): a mean pass, a variance
   pass, a normalize pass; mean and rstd written per row. Built -O3 -march=native
   -ffast-math, the strongest a compiler makes of it. */
void ln_bench_naive_forward(const float *x, const float *gamma, const float *beta, float *y,
                            float *mean, float *rstd, size_t rows, size_t cols, float eps);

/* Backward the straightforward way: per row two reductions, then dx; dgamma and dbeta are
   zeroed and accumulated row after row in float. */
void ln_bench_naive_backward(const float *dy, const float *x, const float *gamma,
                             const float *mean, const float *rstd, float *dx, float *dgamma,
                             float *dbeta, size_t rows, size_t cols);

/* The roofline (stream.c): the same bytes as forward (read 4, write 4 per element) and
   backward (read 8, write 4), as plain loops with ordinary stores. */
void ln_bench_stream_copy(const float *x, float *y, size_t n);
void ln_bench_stream_add(const float *dy, const float *x, float *dx, size_t n);
#if defined(__x86_64__)
/* The same with non-temporal stores: the cold regime's other ceiling. */
#define LN_BENCH_HAVE_STREAM_NT 1
void ln_bench_stream_copy_nt(const float *x, float *y, size_t n);
void ln_bench_stream_add_nt(const float *dy, const float *x, float *dx, size_t n);
#else
#define LN_BENCH_HAVE_STREAM_NT 0
#endif

#ifdef __cplusplus
}
#endif

#endif /* LN_BENCH_BASELINES_H */
