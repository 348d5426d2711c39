/* avx512.c - LayerNorm forward and backward kernels for AVX-512 F/BW/VL/DQ (16 lanes). */
#include "ln_internal.h"

#include "avx512_vocab.h"

#include "kernels/ln_forward.h"
#include "kernels/ln_backward.h"

const ln_kernels ln_kernels_avx512 = {
    .isa = LN_ISA_AVX512,
    .name = "avx512",
    .forward = forward_kernel,
    .backward = backward_kernel,
};
