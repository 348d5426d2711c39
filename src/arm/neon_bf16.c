/* neon_bf16.c - bf16 LayerNorm on AArch64 Advanced SIMD, rounding with integer shifts. */
#define LN_NEON_BF16_NATIVE 0
#include "arm/neon_bf16_vocab.h"

const ln_bf16_kernels ln_bf16_kernels_neon = {
    .isa = LN_ISA_NEON,
    .name = "neon",
    .forward = bf16_forward,
    .backward = bf16_backward,
};
