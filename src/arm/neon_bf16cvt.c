/* neon_bf16cvt.c - bf16 LayerNorm on AArch64 Advanced SIMD, rounding with BFCVTN (FEAT_BF16). */
#define LN_NEON_BF16_NATIVE 1
#include "arm/neon_bf16_vocab.h"

LN_NEON_BF16_KERNELS(ln_bf16_kernels_neonbf16, "neonbf16");
