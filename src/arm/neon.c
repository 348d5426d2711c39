/* neon.c - LayerNorm forward and backward kernels for AArch64 Advanced SIMD (4 float lanes). */
#include "ln_internal.h"

#include "arm/neon_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

const ln_kernels ln_kernels_neon = {
    .isa = LN_ISA_NEON,
    .name = "neon",
    .forward = forward_kernel,
    .backward = backward_kernel,
};
