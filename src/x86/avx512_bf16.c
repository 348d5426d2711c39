/* avx512_bf16.c - bf16 LayerNorm with AVX-512, integer-shift rounding (any AVX-512 CPU). */
#define LN_BF16_CVT 0
#include "avx512_bf16.h"

const ln_bf16_kernels ln_bf16_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .name = "avx512",
    .forward = bf16_forward,
    .backward = bf16_backward,
};
