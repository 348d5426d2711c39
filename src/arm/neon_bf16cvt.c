/* neon_bf16cvt.c - neon_bf16.c again, rounding by BFCVTN (FEAT_BF16 CPUs). */
#define LN_BF16_CVT 1
#include "neon_bf16.c"
