/* avx2.c - LayerNorm forward and backward kernels for AVX2 + FMA (8 float lanes). */
#include "ln_internal.h"

#include "avx2_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

const ln_kernels ln_kernels_avx2 = {
    .isa = LN_ISA_AVX2,
    .name = "avx2",
    .forward = forward_kernel,
    .backward = backward_kernel,
};
