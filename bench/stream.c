/* stream.c - the memory roofline: forward's and backward's traffic with no arithmetic to speak of. */
#include <stdint.h>

#include "baselines.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Built with -fno-builtin and gcc's -fno-tree-loop-distribute-patterns so the copy stays
   this loop: as a memcpy call, glibc switches to non-temporal stores on large sizes and
   the ordinary-store roof would silently become the non-temporal one (measured below). */
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

#if defined(__x86_64__)
/* The cold regime's other ceiling: stores that bypass the caches (no read for ownership,
   no write-back left dirty in L3 after the clock stops). x86-64 only; elsewhere these are
   not registered. Vectors of 4 (SSE, any x86-64): DRAM, not the width, is the limit. */
static size_t head_to_16(const float *p, size_t n)
{
    const size_t mis = ((uintptr_t)p & 15) / sizeof(float);
    const size_t h = mis ? 4 - mis : 0;
    return h < n ? h : n;
}

void ln_bench_stream_copy_nt(const float *restrict x, float *restrict y, size_t n)
{
    size_t i = head_to_16(y, n);
    for (size_t j = 0; j < i; j++)
        y[j] = x[j];
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(y + i, _mm_loadu_ps(x + i));
    for (; i < n; i++)
        y[i] = x[i];
    _mm_sfence();
}

void ln_bench_stream_add_nt(const float *restrict dy, const float *restrict x,
                            float *restrict dx, size_t n)
{
    size_t i = head_to_16(dx, n);
    for (size_t j = 0; j < i; j++)
        dx[j] = dy[j] + x[j];
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(dx + i, _mm_add_ps(_mm_loadu_ps(dy + i), _mm_loadu_ps(x + i)));
    for (; i < n; i++)
        dx[i] = dy[i] + x[i];
    _mm_sfence();
}
#endif
