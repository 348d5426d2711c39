/* gelu_neon.c - GELU forward/backward with AArch64 Advanced SIMD on SLEEF's vector exp and erfc. */
#include "arm/neon_vocab.h"
#include "ln_internal.h"

#include "kernels/gelu_body.h"

const ln_gelu_kernels ln_gelu_kernels_neon = {
    .isa = LN_ISA_NEON,
    .forward = gelu_forward,
    .backward = gelu_backward,
};
