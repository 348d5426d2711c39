/* neon_bf16cvt.c - bf16 LayerNorm on AArch64 Advanced SIMD, rounding with BFCVTN (FEAT_BF16). */
#define LN_NEON_BF16_NATIVE 1
#include "arm/neon_bf16_vocab.h"

const ln_bf16_kernels ln_bf16_kernels_neonbf16 = {
    .isa = LN_ISA_NEON,
    .name = "neonbf16",
    .forward = bf16_forward,
    .backward = bf16_backward,
};
