/* gelu_neon.c - GELU forward/backward with AArch64 Advanced SIMD: inline exp and erfcx (kernels/gelu_math.h). */
#include "arm/neon_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

#include "kernels/entries.h"

LN_GELU_ENTRIES(neon)
