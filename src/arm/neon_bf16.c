/* neon_bf16.c - bf16 LayerNorm on AArch64 Advanced SIMD, rounding with integer shifts. */
#define LN_NEON_BF16_NATIVE 0
#include "arm/neon_bf16_vocab.h"

LN_NEON_BF16_KERNELS(ln_bf16_kernels_neon, "neon");
