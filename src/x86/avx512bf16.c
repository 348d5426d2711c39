/* avx512bf16.c - avx512_bf16.c again, rounding by vcvtneps2bf16 (AVX512_BF16 CPUs). */
#define LN_BF16_CVT 1
#include "avx512_bf16.c"
