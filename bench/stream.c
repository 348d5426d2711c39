/* stream.c - the memory roofline: forward's and backward's traffic with no arithmetic to speak of. */
#include "baselines.h"

/* Built with -fno-tree-loop-distribute-patterns so the copy stays this loop: as a memcpy
   call, glibc switches to non-temporal stores on large sizes and the roof would measure
   a store kind no kernel uses. */
void ln_bench_stream_copy(const float *restrict x, float *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
}

void ln_bench_stream_add(const float *restrict dy, const float *restrict x, float *restrict dx,
                         size_t n)
{
    for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] + x[i];
}
