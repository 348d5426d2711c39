/* sleef.h - SLEEF's AVX-512 entry points as lane-wise calls of its portable functions (emulated builds). */
#ifndef LN_EMU_SLEEF_H
#define LN_EMU_SLEEF_H

/*
 * Found before the real <sleef.h> by the AVX-512 kernel files of a -DLN_EMULATE_AVX512=ON
 * build (whose __m512 is tests/emu/immintrin.h's). Each lane goes through SLEEF's own
 * portable C functions (purec, same u10/u15 accuracy class), so this checks the kernel's
 * logic around the calls (clamps, float-float arguments, tails), not SLEEF's AVX-512 code:
 * the bits may differ from the real vector functions within their stated ulp bounds.
 */
#include <immintrin.h>

/* Prototypes as libsleef exports them (the real header would also declare its SSE
   functions, which need the compiler's immintrin.h). */
float Sleef_expf1_u10purec(float);
float Sleef_erfcf1_u15purec(float);

static inline __m512 Sleef_expf16_u10avx512f(__m512 v)
{
    for (int i = 0; i < 16; i++)
        v.f[i] = Sleef_expf1_u10purec(v.f[i]);
    return v;
}

static inline __m512 Sleef_erfcf16_u15avx512f(__m512 v)
{
    for (int i = 0; i < 16; i++)
        v.f[i] = Sleef_erfcf1_u15purec(v.f[i]);
    return v;
}

#endif
