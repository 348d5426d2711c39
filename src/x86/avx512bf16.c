/* avx512bf16.c - bf16 LayerNorm with AVX-512, rounding by vcvtneps2bf16 (AVX512_BF16 CPUs). */
#define LN_BF16_CVT 1
#include "avx512_bf16.h"

const ln_bf16_kernels ln_bf16_kernels_avx512bf16 = {
    .isa = LN_ISA_AVX512,
    .name = "avx512bf16",
    .forward = bf16_forward,
    .backward = bf16_backward,
};
